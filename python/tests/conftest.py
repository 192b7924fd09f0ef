"""Test setup: the installed kvflash package, the test-only reference library, and a summary of the
SDPA cross-check at the end of the run.

The tests import the *installed* kvflash (scripts/test.sh installs it into .venv with
`pip install --no-build-isolation .`). The C++ double-precision reference and the comparators come
from libkvflash_torch_testing.so (python/CMakeLists.txt, target kvflash_torch_testing), which the
wheel does not ship: KVFLASH_TESTING_LIB names it (scripts/test.sh builds both in build/ci and
sets it), or the one in build/python (`pip install . -C build-dir=build/python`) is used.
"""
import os
import pathlib

import pytest
import torch
import torch.distributed as dist

import kvflash  # noqa: F401  (registers torch.ops.kvflash)

import support

REPO = pathlib.Path(__file__).resolve().parents[2]


def _testing_lib():
    path = os.environ.get("KVFLASH_TESTING_LIB")
    if path:
        return pathlib.Path(path)
    return REPO / "build" / "python" / "python" / "libkvflash_torch_testing.so"


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    """A one-rank gloo group for kvflash.distributed (the sharding arithmetic and the collective
    run as on any world size); the tests of one module share it."""
    path = tmp_path_factory.mktemp("pg") / "store"
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def pytest_configure(config):
    lib = _testing_lib()
    if not lib.is_file():
        raise pytest.UsageError(
            f"the test-only library {lib} is missing: build it with "
            f"`cmake --build build/python --target kvflash_torch_testing` (scripts/test.sh does) "
            f"or set KVFLASH_TESTING_LIB")
    torch.ops.load_library(str(lib))


def pytest_terminal_summary(terminalreporter):
    import fia_support
    for dtype in sorted({e[1] for e in fia_support.WORST}):
        checks = [e for e in fia_support.WORST if e[1] == dtype]
        name, _, ratio, _ = max(checks, key=lambda e: e[2])
        terminalreporter.write_line(
            f"kvflash PFA/FIA vs float64 (fia_support), {dtype}: {len(checks)} checks, "
            f"{sum(e[3] for e in checks)} elements, worst |error| / tolerance {ratio:.3g} in {name}")
    for dtype in sorted({e[1] for e in support.SDPA_WORST}):
        checks = [e for e in support.SDPA_WORST if e[1] == dtype]
        name, _, err, ratio = max(checks, key=lambda e: e[2])
        terminalreporter.write_line(
            f"kvflash vs torch SDPA (float64), {dtype}: {len(checks)} checks, worst |error| "
            f"{err:.3g} ({ratio:.3g} of the tolerance) in {name}")
    import vllm_support
    for dtype in sorted({e[1] for e in vllm_support.WORST}):
        checks = [e for e in vllm_support.WORST if e[1] == dtype]
        name, _, ratio, _ = max(checks, key=lambda e: e[2])
        terminalreporter.write_line(
            f"kvflash vllm-ascend path vs float64 (vllm_support), {dtype}: {len(checks)} checks, "
            f"{sum(e[3] for e in checks)} elements, worst |error| / tolerance {ratio:.3g} in {name}")
