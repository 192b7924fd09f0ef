#!/usr/bin/env bash
# Every C header of an installed kvflash compiles alone as C99 (-pedantic -Werror), and the C
# consumer program (tests/aclnn/c_consumer.c) includes every one of them. With a C++ compiler, every
# .h header (the C ones and CANN's C++ opdev headers) also compiles alone as C++11, the standard
# CANN's sample build files ask for (-std=c++11).
#   check_c_headers.sh <C compiler> <prefix> <c_consumer.c> <work dir> [<C++ compiler>]
# C++-only headers are not C headers and are left out of the C check: kvflash/*.hpp (by their
# extension; the C++ API needs C++20) and the two CANN opdev headers below, which are C++ in CANN
# as well.
set -euo pipefail
cc=$1 prefix=$2 consumer=$3 work=$4 cxx=${5:-}
cxx_only=(aclnn/opdev/fp16_t.h aclnn/opdev/platform.h)
rm -rf "$work" && mkdir -p "$work"

mapfile -t headers < <(cd "$prefix/include" && find . -name '*.h' | sed 's|^\./||' | sort)
[[ ${#headers[@]} -gt 0 ]] || { echo "no headers under $prefix/include"; exit 1; }
status=0 checked=0 checked_cxx=0
for h in "${headers[@]}"; do
  src="$work/$(echo "$h" | tr '/.' '__')"
  printf '#include "%s"\n#include "%s" /* twice: the include guard works */\nint main(void) { return 0; }\n' \
    "$h" "$h" >"$src.c"
  if [[ -n $cxx ]]; then
    checked_cxx=$((checked_cxx + 1))
    cp "$src.c" "$src.cpp"
    if ! "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -I "$prefix/include" -c "$src.cpp" \
        -o "$src.cpp.o"; then
      echo "FAILED: $h does not compile alone as C++11"
      status=1
    fi
  fi
  skip=0
  for x in "${cxx_only[@]}"; do [[ $h == "$x" ]] && skip=1; done
  [[ $skip == 1 ]] && continue
  checked=$((checked + 1))
  if ! "$cc" -std=c99 -Wall -Wextra -pedantic -Werror -I "$prefix/include" -c "$src.c" -o "$src.o"; then
    echo "FAILED: $h does not compile alone as C99"
    status=1
  fi
  if ! grep -qE "^#include [\"<]$h[\">]" "$consumer"; then
    echo "FAILED: $(basename "$consumer") does not include $h"
    status=1
  fi
done
for x in "${cxx_only[@]}"; do
  [[ -e "$prefix/include/$x" ]] || { echo "FAILED: $x is listed as C++ only but not installed"; status=1; }
done
echo "checked $checked C headers as C99 (left out as C++ only: ${cxx_only[*]}, kvflash/*.hpp)"
[[ -n $cxx ]] && echo "checked $checked_cxx headers as C++11"
exit $status
