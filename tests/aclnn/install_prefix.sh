#!/usr/bin/env bash
# Installs a build tree into a fresh prefix (the fixture of the aclnn drop-in tests).
#   install_prefix.sh <cmake> <build dir> <prefix>
set -euo pipefail
cmake_bin=$1 build=$2 prefix=$3
rm -rf "$prefix"
"$cmake_bin" --install "$build" --prefix "$prefix" >/dev/null
for f in include/acl/acl.h include/aclnn/acl_meta.h include/aclnn/opdev/fp16_t.h \
         include/aclnnop/aclnn_incre_flash_attention_v4.h include/kvflash/version.h \
         include/kvflash/export.h lib/libkvflash.so lib/libascendcl.so \
         lib/libopapi.so lib/libnnopbase.so lib/pkgconfig/kvflash.pc lib/cmake/kvflash/kvflashConfig.cmake; do
  [[ -e "$prefix/$f" ]] || { echo "install is missing $f"; exit 1; }
done
# The internal static library (tests, reference, the kvflash program) is not part of the install.
if [[ -n $(find "$prefix" -name 'libkvflash_internal*' -print -quit) ]]; then
  echo "install contains the internal library"; exit 1
fi
echo "installed into $prefix"
