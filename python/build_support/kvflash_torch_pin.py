"""scikit-build-core metadata provider: the wheel requires the torch it was built against.

The extension uses torch's C++ API, whose ABI changes with every torch release, so the wheel's
dependency on torch is `torch==<the version of the build environment's torch>`: the pin of
pyproject.toml's build-system.requires with build isolation, the environment's own torch with
`pip install --no-build-isolation .` (then nothing more is downloaded). The other dependencies are
the `requires` list of the provider's table in pyproject.toml ([tool.scikit-build.metadata.
dependencies]), as written.
"""
import importlib.metadata


def dynamic_metadata(field, settings=None, project=None):
    if field != "dependencies":
        raise RuntimeError(f"kvflash_torch_pin provides 'dependencies', not {field!r}")
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError as e:
        raise RuntimeError("kvflash builds against torch: install it first "
                           "(see pyproject.toml build-system.requires)") from e
    others = list((settings or {}).get("requires", []))
    if not all(isinstance(r, str) for r in others):
        raise RuntimeError("kvflash_torch_pin: 'requires' must be a list of requirement strings")
    return [f"torch=={version}"] + others
