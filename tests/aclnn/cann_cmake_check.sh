#!/usr/bin/env bash
# Builds an example with CANN's own sample build file (tests/aclnn/cann_cmake_consumer) against an
# installed prefix used as ASCEND_HOME_PATH, and runs it as CANN's environment would.
#   cann_cmake_check.sh <cmake> <C++ compiler> <prefix> <consumer dir> <example source> <work dir>
#                       [flags]
set -euo pipefail
cmake_bin=$1 cxx=$2 prefix=$3 consumer=$4 example=$5 work=$6 flags=${7:-}
rm -rf "$work"
ASCEND_HOME_PATH="$prefix" "$cmake_bin" -S "$consumer" -B "$work" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_SKIP_RPATH=TRUE -DEXAMPLE_SOURCE="$example" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
"$cmake_bin" --build "$work" >/dev/null
LD_LIBRARY_PATH="$prefix/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/opapi_test"
