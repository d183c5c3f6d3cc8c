#!/usr/bin/env bash
# integration.system_driver: the BPF suites pass on a node with NVIDIA's
# driver installed system-wide, as on one without. In a private mount
# namespace, NVIDIA's real libcuda.so.1 (Debian's libcuda1, fetched by
# scripts/fetch-nvidia-libs.sh) is put where the GPU Operator's driver
# container puts it (/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so.1,
# one of the agent's usual install paths), and a process keeps it mapped the
# way nvidia-persistenced or a CUDA service does. The integration suites then
# run there: every agent with discovery on finds that driver by itself, and no
# test may count it as its own. Nothing outside the namespace changes.
# Usage: system_driver_test.sh BUILD_DIR
set -euo pipefail
build="$(realpath "$1")"
# shellcheck disable=SC1091
source "$build/nvidia/env" 2>/dev/null || { echo "FAIL: $build/nvidia/env is missing (scripts/fetch-nvidia-libs.sh)" >&2; exit 1; }
[[ -f $NVIDIA_REAL_LIBCUDA ]] || { echo "FAIL: $NVIDIA_REAL_LIBCUDA is missing" >&2; exit 1; }

if [[ ${GPULEDGER_IN_SYSTEM_DRIVER_NS:-} != 1 ]]; then
  exec unshare --mount --propagation private env GPULEDGER_IN_SYSTEM_DRIVER_NS=1 bash "$0" "$@"
fi

# ---- inside the namespace: a tmpfs over /run holds the "installed" driver
mount -t tmpfs -o mode=0755 gpuledger-system-driver /run
lib=/run/nvidia/driver/usr/lib/x86_64-linux-gnu
mkdir -p "$lib"
cp "$NVIDIA_REAL_LIBCUDA" "$lib/libcuda.so.535.261.03"
ln -s libcuda.so.535.261.03 "$lib/libcuda.so.1"
cp "$NVIDIA_REAL_LIBCUDART" "$lib/libcudart.so.11.0"

# A long-lived process with the host's driver mapped (as nvidia-persistenced).
work="$(mktemp -d)"
mkfifo "$work/stdin"
exec 3<>"$work/stdin"  # held open: the holder waits on it until it is killed
LD_LIBRARY_PATH="$lib" "$build/tests/real/real_runtime_app" --ready --driver libcuda.so.1 libcudart.so.11.0 \
  >"$work/out" <"$work/stdin" &
holder=$!
holder_out="$work/out"
trap 'kill "$holder" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q READY "$holder_out" && break; sleep 0.05; done
grep -q READY "$holder_out" || { echo "FAIL: the driver-holding process did not start" >&2; exit 1; }
grep -q "$lib/libcuda.so.535.261.03" "/proc/$holder/maps" || { echo "FAIL: the holder does not map the driver" >&2; exit 1; }
echo "system driver at $lib/libcuda.so.1, mapped by pid $holder"

cd "$build"
# The suites that run agents with discovery on, where a host driver takes a slot or a probe.
./integration_tests --gtest_filter='AgentIntegration.*:HostileTenant.*:RuntimeProbesTest.*:RealNvidia.*' --gtest_brief=1
