#!/usr/bin/env bash
# Installs what gpuledger needs from Debian 12's packages and builds it into
# build/. Idempotent: a second run only rebuilds.
#   scripts/setup.sh          everything (scripts/test.sh, CI): the runtime and
#                             test package lists, the npm test tools, NVIDIA's
#                             real libraries, every target and test
#   scripts/setup.sh --demo   only what `gpuledger demo` runs (scripts/demo.sh):
#                             the runtime list, the binary and the simulators
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
case "${1-}" in
  "") ;;
  --demo) mode=demo ;;
  *) echo "setup: unknown argument '$1' (usage: scripts/setup.sh [--demo])" >&2; exit 2 ;;
esac

if [[ $(id -u) -ne 0 ]]; then
  echo "setup: run as root (it installs Debian packages; the agent loads eBPF programs)" >&2
  exit 1
fi

lists=(scripts/packages-runtime.txt)
[[ $mode == full ]] && lists+=(scripts/packages-test.txt)
mapfile -t packages < <(cat "${lists[@]}" | grep -v '^\s*#' | awk 'NF')
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

if [[ $mode == demo ]]; then
  # The demo runs on the simulators: no NVIDIA libraries, no test tools. A new
  # build has no tests and no debug information: -O2 as the tested builds but
  # no -g, which costs ~30% of the compile time (src/report/report.cpp: 12.5 s
  # of CPU with -g, 8.9 s without). One already configured keeps what it has
  # (the demo's targets are in every build).
  options=()
  [[ -f build/CMakeCache.txt ]] || options=(-DGPULEDGER_TESTS=OFF -DGPULEDGER_BENCH=OFF
    -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG")
  targets=(--target runtime)  # the binary, the workload generator, the simulators
else
  scripts/install-test-tools.sh
  # NVIDIA's real driver library, runtime and NVML (non-free, unpacked privately
  # under build/nvidia; nothing on the host changes): the tests run against them.
  scripts/fetch-nvidia-libs.sh build/nvidia
  options=(-DGPULEDGER_TESTS=ON -DGPULEDGER_BENCH=ON -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}")
  targets=()
fi

cmake -S . -B build "${options[@]}"
cmake --build build -j"$(nproc)" "${targets[@]}"
