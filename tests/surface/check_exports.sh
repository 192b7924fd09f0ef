#!/usr/bin/env bash
# Checks the dynamic symbol table of libkvflash.so against the public API:
#   - every exported symbol is public: a C name acl*/aclnn*/kvflash_*, a function securec.h declares
#     (SECUREC_API: memcpy_s, strcpy_s, ...), or a C++ name that demangles
#     to kvflash::{TensorView members, dtype_size/dtype_name/dtype_is_known, IfaPlan/SfaPlan
#     members, MergePlan / FiaPlan members, incre_flash_attention, sparse_flash_attention,
#     fused_infer_attention_score, prompt_flash_attention, merge_attention_states,
#     LightningIndexerPlan members, lightning_indexer, ScatterPaKvCachePlan members,
#     scatter_pa_kv_cache, FlashAttentionScorePlan members, flash_attention_score,
#     last_error_message,
#     set_num_threads/get_num_threads, set_parallel_backend} or op::* (nothing of kvflash::{cpu,core,ifa,sfa,aclnn}, no
#     standard-library instantiations);
#   - every C function the headers declare with ACL_FUNC_VISIBILITY / KVFLASH_API / SECUREC_API is
#     exported, and
#     so is each C++ entry point named above.
#   check_exports.sh <libkvflash.so> <include dir> [<more include dirs>...]
set -euo pipefail
lib=$1
shift
command -v nm >/dev/null && command -v c++filt >/dev/null || { echo "nm/c++filt missing"; exit 1; }

mapfile -t raw < <(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)
[[ ${#raw[@]} -gt 0 ]] || { echo "no dynamic symbols in $lib"; exit 1; }

# C functions declared public in the headers (the name follows the macro on the same line).
declared_with() {
  grep -rhoE "($1) [^(;]*[ *]([A-Za-z_][A-Za-z0-9_]*)\(" --include='*.h' "${@:2}" |
    sed -E 's/.*[ *]([A-Za-z_][A-Za-z0-9_]*)\($/\1/' | sort -u
}
mapfile -t securec_declared < <(declared_with SECUREC_API "$@")
[[ ${#securec_declared[@]} -gt 0 ]] || { echo "no SECUREC_API declarations under $*"; exit 1; }
is_securec() {
  local n
  for n in "${securec_declared[@]}"; do [[ $1 == "$n" ]] && return 0; done
  return 1
}

cxx_public='^(kvflash::(TensorView::|dtype_size\(|dtype_name\(|dtype_is_known\(|device_name(\[abi:cxx11\])?\(|IfaPlan::|SfaPlan::|MergePlan::|FiaPlan::|LightningIndexerPlan::|ScatterPaKvCachePlan::|scatter_pa_kv_cache\(|FlashAttentionScorePlan::|flash_attention_score\(|lightning_indexer\(|incre_flash_attention\(|fused_infer_attention_score\(|prompt_flash_attention\(|sparse_flash_attention\(|merge_attention_states\(|last_error_message\(|set_num_threads\(|get_num_threads\(|set_parallel_backend\()|op::)'
# Linker-defined markers some binutils versions export from every shared library.
linker_defined='^(_init|_fini|_edata|_end|__bss_start)$'

bad=()
exported=()
for sym in "${raw[@]}"; do
  if [[ $sym == _Z* ]]; then
    name=$(c++filt "$sym")
    [[ $name =~ $cxx_public ]] || bad+=("$name   ($sym)")
  else
    name=$sym
    [[ $name =~ ^acl[A-Za-z0-9_]*$ || $name =~ ^kvflash_[a-z0-9_]+$ || $name =~ $linker_defined ]] ||
      is_securec "$name" || bad+=("$name")
  fi
  exported+=("$name")
done

# Into a file: grep -q on a pipe would end the writer early (SIGPIPE, a failure under pipefail).
names_file=$(mktemp)
trap 'rm -f "$names_file"' EXIT
printf '%s\n' "${exported[@]}" >"$names_file"
missing=()
mapfile -t declared < <(declared_with 'ACL_FUNC_VISIBILITY|KVFLASH_API|SECUREC_API' "$@")
[[ ${#declared[@]} -gt 0 ]] || { echo "no declarations found under $*"; exit 1; }
for fn in "${declared[@]}"; do
  grep -qx -- "$fn" "$names_file" || missing+=("$fn")
done
for fn in 'kvflash::dtype_size(' 'kvflash::dtype_name(' 'kvflash::dtype_is_known(' \
          'kvflash::TensorView::contiguous(' 'kvflash::TensorView::numel(' \
          'kvflash::TensorView::is_contiguous(' 'kvflash::TensorView::describe' \
          'kvflash::IfaPlan::create(' 'kvflash::IfaPlan::~IfaPlan(' 'kvflash::IfaPlan::workspace_size(' \
          'kvflash::IfaPlan::run(' 'kvflash::IfaPlan::status(' 'kvflash::IfaPlan::fingerprint(' 'kvflash::device_name' \
          'kvflash::SfaPlan::create(' 'kvflash::SfaPlan::~SfaPlan(' 'kvflash::SfaPlan::workspace_size(' \
          'kvflash::SfaPlan::run(' 'kvflash::SfaPlan::status(' 'kvflash::SfaPlan::fingerprint(' \
          'kvflash::MergePlan::create(' 'kvflash::MergePlan::~MergePlan(' \
          'kvflash::MergePlan::workspace_size(' 'kvflash::MergePlan::run(' 'kvflash::MergePlan::status(' \
          'kvflash::MergePlan::fingerprint(' \
          'kvflash::merge_attention_states(' \
          'kvflash::LightningIndexerPlan::create(' 'kvflash::LightningIndexerPlan::run(' \
          'kvflash::LightningIndexerPlan::workspace_size(' 'kvflash::LightningIndexerPlan::status(' \
          'kvflash::LightningIndexerPlan::fingerprint(' 'kvflash::lightning_indexer(' \
          'kvflash::incre_flash_attention(' 'kvflash::sparse_flash_attention(' \
          'kvflash::last_error_message(' 'kvflash::set_num_threads(' 'kvflash::get_num_threads(' \
          'kvflash::set_parallel_backend(' \
          'kvflash::FiaPlan::create(' 'kvflash::FiaPlan::~FiaPlan(' 'kvflash::FiaPlan::workspace_size(' \
          'kvflash::FiaPlan::run(' 'kvflash::FiaPlan::status(' 'kvflash::FiaPlan::fingerprint(' \
          'kvflash::fused_infer_attention_score(' 'kvflash::prompt_flash_attention(' \
          'kvflash::ScatterPaKvCachePlan::create(' 'kvflash::ScatterPaKvCachePlan::~ScatterPaKvCachePlan(' \
          'kvflash::ScatterPaKvCachePlan::workspace_size(' 'kvflash::ScatterPaKvCachePlan::run(' \
          'kvflash::ScatterPaKvCachePlan::status(' 'kvflash::ScatterPaKvCachePlan::fingerprint(' \
          'kvflash::scatter_pa_kv_cache(' \
          'kvflash::FlashAttentionScorePlan::create(' 'kvflash::FlashAttentionScorePlan::run(' \
          'kvflash::FlashAttentionScorePlan::workspace_size(' 'kvflash::FlashAttentionScorePlan::status(' \
          'kvflash::FlashAttentionScorePlan::fingerprint(' 'kvflash::flash_attention_score('; do
  grep -qF -- "$fn" "$names_file" || missing+=("$fn")
done

echo "$lib exports ${#raw[@]} symbols (${#declared[@]} C functions declared public)"
status=0
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "FAILED: ${#bad[@]} exported symbols are not public API:"
  printf '  %s\n' "${bad[@]:0:50}"
  [[ ${#bad[@]} -le 50 ]] || echo "  ... and $((${#bad[@]} - 50)) more"
  status=1
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "FAILED: ${#missing[@]} public functions are not exported:"
  printf '  %s\n' "${missing[@]}"
  status=1
fi
[[ $status == 0 ]] && echo "exports: only the public API, all of it"
exit $status
