#!/usr/bin/env bash
# Installs what gpuledger needs from Debian 12's packages (scripts/packages.txt)
# and builds it into build/. Idempotent: a second run only rebuilds.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then
  echo "setup: run as root (it installs Debian packages; the agent loads eBPF programs)" >&2
  exit 1
fi

mapfile -t packages < <(grep -v '^\s*#' scripts/packages.txt | awk 'NF')
missing=()
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for line in "${packages[@]}"; do
  # `a|b`: any one of them will do (e.g. kubectl from another repository); a is installed if none is.
  IFS='|' read -ra alternatives <<<"${line// /}"
  found=
  for p in "${alternatives[@]}"; do installed "$p" && found=1 && break; done
  [[ -n $found ]] || missing+=("${alternatives[0]}")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [[ ! -r /sys/kernel/btf/vmlinux ]]; then
  echo "setup: /sys/kernel/btf/vmlinux is missing: gpuledger needs a kernel built with BTF (CONFIG_DEBUG_INFO_BTF)" >&2
  exit 1
fi

scripts/install-test-tools.sh
# NVIDIA's real driver library, runtime and NVML (non-free, unpacked privately
# under build/nvidia; nothing on the host changes): the tests run against them.
scripts/fetch-nvidia-libs.sh build/nvidia

cmake -S . -B build -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
cmake --build build -j"$(nproc)"
