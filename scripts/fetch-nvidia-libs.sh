#!/usr/bin/env bash
# Fetches NVIDIA's real user-space libraries (Debian 12's non-free component)
# into a private folder, for the tests that run against the real thing:
#   libcuda1, libnvidia-ml1   535.261.03  the driver library and NVML of driver 535
#   libcudart11.0             11.8.89     the CUDA 11.8 runtime
#   libnvidia-ml-dev          11.8.86     the real nvml.h
# The host's package sources, installed packages and library search paths are
# left as they are: apt runs with its own source list, state and cache folders,
# and the packages are unpacked with `dpkg-deb -x`, never installed.
#
# Usage: scripts/fetch-nvidia-libs.sh [DEST]   (default build/nvidia)
# Result: DEST/root/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1, ...,
#         DEST/env (shell assignments naming each file), DEST/.stamp.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$(realpath -m "${1:-build/nvidia}")

# The driver is pinned to the version the tests and docs describe; the archive
# keeps it beside its security updates. A box whose mirror has lost it takes the
# candidate (a later 535.x), which the catalogue test checks just the same.
driver_version=535.261.03-1
packages=(libcuda1 libnvidia-ml1 libcudart11.0 libnvidia-ml-dev)
stamp="$dest/.stamp"
want="${packages[*]} $driver_version v2"
if [[ -f $stamp && $(cat "$stamp") == "$want" && -f $dest/env ]]; then exit 0; fi

arch=$(dpkg --print-architecture)
if [[ $arch != amd64 ]]; then
  echo "fetch-nvidia-libs: the real NVIDIA libraries are fetched for amd64 only, not $arch" >&2
  exit 1
fi

rm -rf "$dest"
mkdir -p "$dest"/apt/{etc,state/lists/partial,cache/archives/partial} "$dest/deb" "$dest/root"
# The same mirror as the host's Debian sources, non-free only.
mirror=http://deb.debian.org/debian
security=http://deb.debian.org/debian-security
if grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -1 | grep -q .; then
  mirror=$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -1 | tr -d ' ')
  mirror=${mirror%/}
fi
cat >"$dest/apt/etc/sources.list" <<EOF
deb $mirror bookworm non-free
deb $mirror bookworm-updates non-free
deb $security bookworm-security non-free
EOF
apt_opts=(
  -o "Dir::Etc::SourceList=$dest/apt/etc/sources.list"
  -o "Dir::Etc::SourceParts=$dest/apt/etc/none"
  -o "Dir::Etc::Preferences=$dest/apt/etc/none"
  -o "Dir::Etc::PreferencesParts=$dest/apt/etc/none"
  -o "Dir::State=$dest/apt/state"
  -o "Dir::State::status=/var/lib/dpkg/status"
  -o "Dir::Cache=$dest/apt/cache"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=root"
  -q
)
echo "fetch-nvidia-libs: fetching ${packages[*]} (Debian non-free) into $dest"
apt-get "${apt_opts[@]}" update >"$dest/apt/update.log" 2>&1 || {
  echo "fetch-nvidia-libs: apt-get update of the private non-free source list failed (see $dest/apt/update.log)" >&2
  exit 1
}
wanted=()
for p in "${packages[@]}"; do
  case $p in
    libcuda1 | libnvidia-ml1)
      if apt-cache "${apt_opts[@]}" show "$p=$driver_version" >/dev/null 2>&1; then
        wanted+=("$p=$driver_version")
      else
        wanted+=("$p")
      fi
      ;;
    *) wanted+=("$p") ;;
  esac
done
(cd "$dest/deb" && apt-get "${apt_opts[@]}" download "${wanted[@]}") >"$dest/apt/download.log" 2>&1 || {
  echo "fetch-nvidia-libs: downloading ${wanted[*]} failed (see $dest/apt/download.log)" >&2
  exit 1
}
for deb in "$dest"/deb/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done

lib="$dest/root/usr/lib/x86_64-linux-gnu"
first() { [[ -e $1 ]] && echo "$1"; }  # the first match of a glob, if any
libcuda=$(first "$lib"/nvidia/current/libcuda.so.5*)
libnvml=$(first "$lib"/nvidia/current/libnvidia-ml.so.5*)
libcudart=$(first "$lib"/libcudart.so.11.8.*)
for f in "$libcuda" "$libnvml" "$libcudart" "$dest/root/usr/include/nvml.h"; do
  [[ -f $f ]] || { echo "fetch-nvidia-libs: $f is missing from the unpacked packages" >&2; exit 1; }
done
# A folder holding only the driver's sonames, for tenants' LD_LIBRARY_PATH.
mkdir -p "$dest/driver"
ln -sf "$libcuda" "$dest/driver/libcuda.so.1"
ln -sf "$libcuda" "$dest/driver/libcuda.so"
ln -sf "$libnvml" "$dest/driver/libnvidia-ml.so.1"
ln -sf "$libcudart" "$dest/driver/libcudart.so.11.0"
cat >"$dest/env" <<EOF
NVIDIA_REAL_LIBCUDA=$libcuda
NVIDIA_REAL_LIBNVML=$libnvml
NVIDIA_REAL_LIBCUDART=$libcudart
NVIDIA_REAL_NVML_H=$dest/root/usr/include/nvml.h
NVIDIA_REAL_LIBDIR=$dest/driver
NVIDIA_REAL_DRIVER_VERSION=$(basename "$libcuda" | sed 's/^libcuda\.so\.//')
EOF
echo "$want" >"$stamp"
echo "fetch-nvidia-libs: $(basename "$libcuda"), $(basename "$libnvml"), $(basename "$libcudart") and nvml.h in $dest"
