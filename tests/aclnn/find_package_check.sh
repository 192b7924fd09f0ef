#!/usr/bin/env bash
# Configures, builds and runs tests/aclnn/find_package_consumer against an installed prefix.
#   find_package_check.sh <cmake> <prefix> <consumer dir> <example source> <C++ API source>
#                         <work dir> [flags]
set -euo pipefail
cmake_bin=$1 prefix=$2 consumer=$3 example=$4 cpp_example=$5 work=$6 flags=${7:-}
rm -rf "$work"
"$cmake_bin" -S "$consumer" -B "$work" -DCMAKE_PREFIX_PATH="$prefix" -DEXAMPLE_SOURCE="$example" \
  -DCPP_EXAMPLE_SOURCE="$cpp_example" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake_bin" --build "$work" >/dev/null
"$work/consumer"
"$work/cpp_consumer"
