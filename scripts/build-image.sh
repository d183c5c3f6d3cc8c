#!/usr/bin/env bash
# Builds the gpuledger OCI image from Debian 12 packages, with no registry:
#   1. the Debian package of this build (cpack, in build/),
#   2. a minimal Debian 12 root file system with that package installed by apt
#      (mmdebstrap --variant=essential: only what the package depends on is added),
#   3. imported into podman as gpuledger:VERSION (VERSION: the CMake project's),
#      and saved as build/gpuledger-VERSION.oci.tar for other runtimes
#      (`ctr -n k8s.io images import`, `skopeo copy oci-archive:...`).
# Usage: scripts/build-image.sh   (after scripts/setup.sh; runs as root)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
version=$("$build/gpuledger" --version | awk '{print $2}')
image=gpuledger:$version
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd "$build" && cpack -G DEB >/dev/null)
deb=$(realpath "$build/gpuledger_${version}_amd64.deb")

# Downloaded packages are kept in $build/image-apt-cache, so that a rebuild
# downloads only what changed. No documentation, manuals or locales in the
# image: it runs one binary.
cache=$(realpath -m "$build/image-apt-cache")
mkdir -p "$cache"
mmdebstrap --variant=essential --quiet \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/gpuledger/*' \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --include=ca-certificates --include="$deb" \
  --skip=download/empty --skip=essential/unlink \
  --setup-hook="mkdir -p \"\$1\"/var/cache/apt/archives && find '$cache' -name '*.deb' -exec cp -t \"\$1\"/var/cache/apt/archives {} +" \
  --customize-hook="find \"\$1\"/var/cache/apt/archives -name '*.deb' ! -name 'gpuledger_*' -exec cp -t '$cache' {} +" \
  --customize-hook="rm -rf \"\$1\"/var/lib/apt/lists/* \"\$1\"/var/cache/apt/archives/*.deb" \
  bookworm "$work/rootfs.tar" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb ${mirror%/debian}/debian-security bookworm-security main"

podman import --quiet \
  --change 'ENTRYPOINT ["/usr/bin/gpuledger"]' \
  --change 'CMD ["agent", "--listen=0.0.0.0:9401"]' \
  --change 'EXPOSE 9401' \
  --change "LABEL org.opencontainers.image.title=gpuledger org.opencontainers.image.version=$version org.opencontainers.image.licenses=Apache-2.0" \
  "$work/rootfs.tar" "$image" >/dev/null
podman save --quiet --format oci-archive -o "$build/gpuledger-$version.oci.tar" "$image"
echo "built $image ($(podman image inspect --format '{{.Size}}' "$image") bytes) and $build/gpuledger-$version.oci.tar"
