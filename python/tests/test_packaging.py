"""What `pip install .` gives a new user (issue 19): a clean `import kvflash` (nothing on stderr:
numpy is a dependency, so torch does not warn), the `kvflash` command on the environment's PATH,
and the README's statement of what the install costs and how to fetch torch once."""
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

import kvflash

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_import_prints_nothing():
    r = subprocess.run([sys.executable, "-c", "import kvflash, kvflash.torch_npu, "
                        "kvflash.distributed"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and r.stdout == "", r.stderr


def test_the_wheel_requires_numpy_and_its_torch():
    reqs = importlib.metadata.requires("kvflash") or []
    names = [re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0].lower() for r in reqs]
    assert "numpy" in names, reqs
    assert f"torch=={importlib.metadata.version('torch')}" in reqs, reqs


def _command():
    """The `kvflash` console command installed beside this interpreter."""
    path = pathlib.Path(sys.executable).parent / "kvflash"
    assert path.is_file() and os.access(path, os.X_OK), f"{path} is not installed"
    return path


def test_the_kvflash_command_is_installed():
    r = subprocess.run([str(_command()), "info", "--no-bandwidth"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"kvflash {kvflash.__version__}\n"), r.stdout


def test_the_kvflash_command_is_on_the_environments_path():
    env = dict(os.environ, PATH=str(pathlib.Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    r = subprocess.run(["kvflash", "bench", "ifa:b1,s16,n4,kvn2,d64,paged=0", "--iters", "1",
                        "--no-bandwidth"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all problems ran and passed their checks" in r.stdout, r.stdout


def test_the_readme_states_the_install_cost_and_the_one_fetch_route():
    text = (REPO / "README.md").read_text()
    section = text[text.index("## PyTorch"):text.index("## Building by hand")]
    pin = re.search(r'"torch==([0-9.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert "pip install ." in section
    assert re.search(r"about \d+ minutes and [0-9.]+ GB", section), section
    assert f"pip install torch=={pin}" in section
    assert "pip install --no-build-isolation ." in section
    assert "build/release/kvflash" in text  # where demo.sh leaves the program
