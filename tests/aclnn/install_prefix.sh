#!/usr/bin/env bash
# Installs a build tree into a fresh prefix (the fixture of the aclnn drop-in tests).
#   install_prefix.sh <cmake> <build dir> <prefix>
set -euo pipefail
cmake_bin=$1 build=$2 prefix=$3
rm -rf "$prefix"
"$cmake_bin" --install "$build" --prefix "$prefix" >/dev/null
for f in include/acl/acl.h include/aclnn/acl_meta.h include/aclnn/opdev/fp16_t.h \
         include/aclnnop/aclnn_incre_flash_attention_v4.h include/kvflash/version.h \
         include/kvflash/export.h include/securec.h include/securectype.h lib/libkvflash.so \
         lib/pkgconfig/kvflash.pc lib/cmake/kvflash/kvflashConfig.cmake; do
  [[ -e "$prefix/$f" ]] || { echo "install is missing $f"; exit 1; }
done
# CANN's library names, in lib and (CANN's layout, docs/api.md) lib64, resolve to the library.
library=$(readlink -f "$prefix/lib/libkvflash.so")
for dir in lib lib64; do
  for name in ascendcl nnopbase opapi opapi_math opapi_transformer c_sec; do
    [[ $(readlink -f "$prefix/$dir/lib$name.so") == "$library" ]] ||
      { echo "install: $dir/lib$name.so does not resolve to $library"; exit 1; }
  done
done
soname=$(objdump -p "$library" | awk '/SONAME/ {print $2}')
[[ $(readlink -f "$prefix/lib64/$soname") == "$library" ]] ||
  { echo "install: lib64/$soname does not resolve to $library"; exit 1; }
# The internal static library (tests, reference, the kvflash program) is not part of the install.
if [[ -n $(find "$prefix" -name 'libkvflash_internal*' -print -quit) ]]; then
  echo "install contains the internal library"; exit 1
fi
echo "installed into $prefix"
