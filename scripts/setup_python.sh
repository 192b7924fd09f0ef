#!/usr/bin/env bash
# Creates the Python environment that builds and tests the kvflash package (idempotent): a venv
# (.venv, or $KVFLASH_VENV) holding pyproject.toml's build-system requirements (scikit-build-core
# and the pinned torch, the one place its version is written), the package's other run-time
# dependencies (numpy: the `requires` of [tool.scikit-build.metadata.dependencies]) and its test
# extra (pytest, hypothesis). Everything comes from PyPI through pip; a second run downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${KVFLASH_VENV:-.venv}
python=${KVFLASH_PYTHON_EXE:-python3}

if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "setup_python: installing python3-venv"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq python3-venv
fi
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"

mapfile -t requirements < <("$venv/bin/python" - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)
print("\n".join(project["build-system"]["requires"] +
                project["tool"]["scikit-build"]["metadata"]["dependencies"]["requires"] +
                project["project"]["optional-dependencies"]["test"]))
PY
)
if ! "$venv/bin/python" - "${requirements[@]}" 2>/dev/null <<'PY'
# exit 0 when every requirement is installed at a matching version (packaging comes with them)
import sys
from importlib.metadata import version, PackageNotFoundError
from packaging.requirements import Requirement
for line in sys.argv[1:]:
    r = Requirement(line)
    try:
        if not r.specifier.contains(version(r.name), prereleases=True):
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
then
  echo "setup_python: pip install ${requirements[*]} (torch is ~5 GB installed: a few minutes)"
  "$venv/bin/python" -m pip install -q "${requirements[@]}"
fi
