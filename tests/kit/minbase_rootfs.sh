#!/usr/bin/env bash
# minbase_rootfs.sh TARBALL: the test's bare Debian 12 root filesystem, made
# once with mmdebstrap (--variant=minbase: essential packages and apt only, none
# of gpuledger's libraries) and cached as TARBALL; later runs reuse it.
# Exit: 0 ready; 1 mmdebstrap missing or failed (the caller decides whether
# that skips or fails).
set -euo pipefail
tarball="$1"
[[ -s "$tarball" ]] && exit 0
command -v mmdebstrap >/dev/null || { echo "minbase_rootfs: mmdebstrap not installed (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$(dirname "$tarball")"
partial="$tarball.partial.$$"
trap 'rm -f "$partial"' EXIT
echo "minbase_rootfs: building $tarball with mmdebstrap (once; about a minute)" >&2
mmdebstrap --quiet --variant=minbase --mode=root --format=tar bookworm "$partial" >&2 || exit 1
mv "$partial" "$tarball"
