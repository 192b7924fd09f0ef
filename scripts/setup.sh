#!/usr/bin/env bash
# Installs what building and testing kvflash needs on a fresh Debian 12 machine (idempotent: it only
# calls apt-get when a package is missing).
set -euo pipefail

packages=(cmake g++ make ninja-build pkg-config libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
