#!/usr/bin/env bash
# Builds one CANN-style program against an installed kvflash exactly as docs/api.md says a user
# would, runs it, and (optionally) checks what it prints.
#
#   build_and_run.sh --cxx CXX --prefix P --src FILE --work DIR
#                    [--link kvflash|cann|cann-8.5|pkgconfig|pkgconfig-cxx]
#                    [--flags "EXTRA"] [--seed] [--expect-seed-output]
#
# --link kvflash:   CXX FILE -I P/include -L P/lib -lkvflash -Wl,-rpath,P/lib
# --link cann:      CXX FILE -I P/include -L P/lib -lascendcl -lopapi -lnnopbase -Wl,-rpath,P/lib
# --link cann-8.5:  CANN 8.5's sample line (docs/api.md), P standing for ASCEND_HOME_PATH:
#                   CXX FILE -I P/include -I P/include/aclnn -I P/include/aclnnop -L P/lib64
#                   -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec; no rpath: it
#                   runs with LD_LIBRARY_PATH=P/lib64, as CANN's set_env.sh sets it.
# --link pkgconfig: CXX FILE $(pkg-config --cflags --libs kvflash) -Wl,-rpath,P/lib
# --link pkgconfig-cxx: the same plus $(pkg-config --variable=cxxflags kvflash) (-std=c++20), as
#                   docs/api.md says a program using the C++ API (kvflash/*.hpp) adds.
# --seed:           FILE is the seed document; the program is extracted from "#include <iostream>"
#                   to the closing brace of main() and compiled unchanged. Exit 77 (skip) if absent.
# --expect-seed-output: the program must print exactly 32 lines "index: i: v" with v = 0 for even
#                   i and 1.875 for odd i (docs/semantics.md §1.3: fp16 tensors filled from float buffers).
# --flags: extra compiler flags (the sanitizer flags of a sanitizer build; empty otherwise).
set -euo pipefail
cxx="" prefix="" src="" work="" link=kvflash flags="" seed=0 expect_seed=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --cxx) cxx=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --flags) flags=$2; shift 2 ;;
    --seed) seed=1; shift ;;
    --expect-seed-output) expect_seed=1; shift ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
done
rm -rf "$work" && mkdir -p "$work"

if [[ $seed == 1 ]]; then
  if [[ ! -f "$src" ]]; then echo "seed $src not present: skipping"; exit 77; fi
  prog="$work/seed_example.cpp"
  awk '/^#include <iostream>/{p=1} p{print} p&&/^int main\(/{m=1} m&&/^}/{exit}' "$src" > "$prog"
  grep -q '^int main(' "$prog" || { echo "no example program found in $src"; exit 1; }
else
  # Copy beside the examples' helper header, as a user would have it (programs outside
  # examples/ have none).
  for header in "$(dirname "$src")"/*_example_util.h; do
    [ -e "$header" ] && cp "$header" "$work"/
  done
  prog="$work/$(basename "$src")"
  cp "$src" "$prog"
fi

exe="$work/program"
# shellcheck disable=SC2086  # flags are deliberately word-split
case $link in
  kvflash) cmd=("$cxx" "$prog" -I "$prefix/include" -L "$prefix/lib" -lkvflash "-Wl,-rpath,$prefix/lib") ;;
  cann) cmd=("$cxx" "$prog" -I "$prefix/include" -L "$prefix/lib" -lascendcl -lopapi -lnnopbase "-Wl,-rpath,$prefix/lib") ;;
  cann-8.5)
    cmd=("$cxx" "$prog" -I "$prefix/include" -I "$prefix/include/aclnn" -I "$prefix/include/aclnnop"
         -L "$prefix/lib64" -lascendcl -lnnopbase -lopapi_math -lopapi_transformer -lc_sec)
    export LD_LIBRARY_PATH="$prefix/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
  pkgconfig|pkgconfig-cxx)
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    # The .pc carries the configure-time prefix; point it at the one we installed into.
    read -r -a pc <<<"$(pkg-config --define-variable=prefix="$prefix" --cflags --libs kvflash)"
    if [[ $link == pkgconfig-cxx ]]; then
      read -r -a pc_cxx <<<"$(pkg-config --variable=cxxflags kvflash)"
      [[ ${#pc_cxx[@]} -gt 0 ]] || { echo "kvflash.pc has no cxxflags variable"; exit 1; }
      pc+=("${pc_cxx[@]}")
    fi
    cmd=("$cxx" "$prog" "${pc[@]}" "-Wl,-rpath,$prefix/lib") ;;
  *) echo "unknown --link $link"; exit 2 ;;
esac
read -r -a extra <<<"$flags"
cmd+=("${extra[@]}" -o "$exe")
echo "+ ${cmd[*]}"
"${cmd[@]}"

out="$work/output.txt"
"$exe" >"$out" 2>&1 || { echo "program failed (exit $?):"; cat "$out"; exit 1; }
cat "$out"

if [[ $expect_seed == 1 ]]; then
  want="$work/expected.txt"
  for i in $(seq 0 31); do
    if (( i % 2 == 0 )); then echo "index: $i: 0"; else echo "index: $i: 1.875"; fi
  done >"$want"
  diff -u "$want" "$out" || { echo "seed output differs from the expected 0 / 1.875 pattern"; exit 1; }
  echo "seed output matches (32 lines)"
fi
