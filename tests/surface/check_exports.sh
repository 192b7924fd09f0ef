#!/usr/bin/env bash
# Checks the dynamic symbol table of libkvflash.so against the public API:
#   - every exported symbol is public: a C name acl*/aclnn*/kvflash_*, a function securec.h declares
#     (SECUREC_API: memcpy_s, strcpy_s, ...), or a C++ name that demangles
#     to kvflash::{TensorView members, dtype_size/dtype_name/dtype_is_known, device_name,
#     last_error_message, set_num_threads/get_num_threads, set_parallel_backend, the members of
#     every plan and every one-shot function of src/ops/operators.def} or op::* (nothing of
#     kvflash::{cpu,core,ifa,sfa,aclnn}, no standard-library instantiations);
#   - every C function the headers declare with ACL_FUNC_VISIBILITY / KVFLASH_API / SECUREC_API is
#     exported, and so is each C++ entry point named above (a plan's create, destructor,
#     workspace_size, run, status and fingerprint).
#   check_exports.sh <libkvflash.so> <include dir> [<more include dirs>...]
set -euo pipefail
registry="$(dirname "$0")/../../src/ops/operators.def"
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

# The plans and one-shot functions of the operator registry (one entry a line:
# KVFLASH_OPERATOR(op,Op,Plan,Args), KVFLASH_COMPOSITE(op,Plan,Args), KVFLASH_FUNCTION(name)).
mapfile -t plans < <(sed -nE 's/^KVFLASH_OPERATOR\([^,]*,[^,]*,([A-Za-z0-9_]+),.*/\1/p;
                               s/^KVFLASH_COMPOSITE\([^,]*,([A-Za-z0-9_]+),.*/\1/p' "$registry")
mapfile -t functions < <(sed -nE 's/^KVFLASH_FUNCTION\(([A-Za-z0-9_]+)\).*/\1/p' "$registry")
[[ ${#plans[@]} -gt 0 && ${#functions[@]} -gt 0 ]] || { echo "no operators in $registry"; exit 1; }
operator_names=$(printf '%s::|' "${plans[@]}")$(printf '%s\\(|' "${functions[@]}")
cxx_public='^(kvflash::(TensorView::|dtype_size\(|dtype_name\(|dtype_is_known\(|device_name(\[abi:cxx11\])?\(|'"$operator_names"'last_error_message\(|set_num_threads\(|get_num_threads\(|set_parallel_backend\()|op::)'
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
required=('kvflash::dtype_size(' 'kvflash::dtype_name(' 'kvflash::dtype_is_known('
          'kvflash::TensorView::contiguous(' 'kvflash::TensorView::numel('
          'kvflash::TensorView::is_contiguous(' 'kvflash::TensorView::describe' 'kvflash::device_name'
          'kvflash::last_error_message(' 'kvflash::set_num_threads(' 'kvflash::get_num_threads('
          'kvflash::set_parallel_backend(')
for plan in "${plans[@]}"; do
  for member in create "~$plan" workspace_size run status fingerprint; do
    required+=("kvflash::$plan::$member(")
  done
done
for fn in "${functions[@]}"; do required+=("kvflash::$fn("); done
for fn in "${required[@]}"; do
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
