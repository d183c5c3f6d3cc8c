#!/usr/bin/env bash
# bundle.sh: a self-contained gpuledger directory for a Linux machine that has
# none of the project's Debian packages (a bare GPU machine, a minbase root
# filesystem). One command:
#
#   scripts/bundle.sh [--build-dir build] [--out dist] [--no-build]
#
# builds (or, with --no-build, reuses) the build tree and writes
# <out>/gpuledger-<version>-linux-<arch>/:
#   gpuledger, gpuledger-cudasim, gpuledger-cuda-address-check   RUNPATH $ORIGIN/lib
#   libgpuledger-proc-address-recorder.so   LD_PRELOAD: what a CUDA runtime fetches from the driver
#   sim/lib/          the CUDA driver simulator (what `gpuledger demo` and the kit's --simulate use)
#   sim/nvml/         the NVML simulator
#   lib/              every shared library those need that glibc does not provide
#   glibc/            the build machine's glibc, used only where the host's is older than
#                     the bundle needs (gpuledger-run decides; see MANIFEST)
#   gpuledger-run     runs a bundled program with the right C library
#   MANIFEST          version, commit, glibc needed, files and sizes
# Everything is stripped; the size is printed and must stay under --max-mib (56): with the
# working tree (about 5 MiB) it fits the GPU machine's 64 MiB carry.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
OUT_DIR="$ROOT/dist"
BUILD=1
MAX_MIB=56
TARGETS=(gpuledger gpuledger-cudasim cudasim nvmlsim gpuledger-cuda-address-check gpuledger-proc-address-recorder)
# glibc's own libraries: the host provides them (or glibc/ does, below).
GLIBC_SONAMES=(ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libmvec.so.1 libpthread.so.0 libdl.so.2 librt.so.1
               libresolv.so.2 libutil.so.1 libanl.so.1 libnsl.so.1 libBrokenLocale.so.1 libthread_db.so.1
               libc_malloc_debug.so.0 libnss_files.so.2 libnss_dns.so.2)
# Libraries the bundle carries as simulators, never as dependencies: on a GPU
# machine the host's driver libraries must win.
SIMULATED_SONAMES=(libcuda.so.1 libnvidia-ml.so.1)

usage() { sed -n '2,19s/^# \{0,1\}//p' "$0"; }
log() { printf '[bundle] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

while (($#)); do
  case "$1" in
    --build-dir) BUILD_DIR="$(realpath "$2")"; shift 2 ;;
    --out) OUT_DIR="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --max-mib) MAX_MIB="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
for tool in patchelf strip objdump ldd; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/setup.sh installs it)"
done

if ((BUILD)); then
  [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
  for t in "${TARGETS[@]}"; do cmake --build "$BUILD_DIR" --target "$t" -j"${JOBS:-$(nproc)}" >&2; done
fi
for f in gpuledger gpuledger-cudasim gpuledger-cuda-address-check tools/libgpuledger-proc-address-recorder.so \
         sim/lib/libcuda.so.1 sim/nvml/libnvidia-ml.so.1; do
  [[ -e "$BUILD_DIR/$f" ]] || die "$BUILD_DIR/$f missing: build first (or drop --no-build)"
done

version="$("$BUILD_DIR/gpuledger" --version | awk '{print $NF}')"
name="gpuledger-${version}-linux-$(uname -m)"
mkdir -p "$OUT_DIR"
dest="$(realpath "$OUT_DIR")/$name"
rm -rf "$dest"
mkdir -p "$dest/lib" "$dest/glibc" "$dest/sim/lib" "$dest/sim/nvml"

cp "$BUILD_DIR"/{gpuledger,gpuledger-cudasim,gpuledger-cuda-address-check} "$dest/"
# The proc-address recorder (LD_PRELOAD; glibc only): what a runtime fetches from the driver.
cp "$BUILD_DIR/tools/libgpuledger-proc-address-recorder.so" "$dest/"
# Every simulator library (and its namelinks) that the build made.
cp -a "$BUILD_DIR"/sim/lib/lib*.so* "$dest/sim/lib/"
cp -a "$BUILD_DIR"/sim/nvml/lib*.so* "$dest/sim/nvml/"

in_list() {  # in_list WORD LIST...
  local w="$1" x
  shift
  for x in "$@"; do [[ "$x" == "$w" ]] && return 0; done
  return 1
}

# ------------------------------------------------------------ dependencies
# ldd lists the whole closure; resolve it against the build tree's binaries
# (whose RUNPATHs still point into the build) so nothing is missed.
mapfile -t elves < <(find "$dest" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c \
  'head -c4 "$1" | grep -q ELF' _ {} \; -print)
declare -A copied=()
for elf in "${elves[@]}"; do
  rel="${elf#"$dest"/}"
  while read -r soname arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    in_list "$soname" "${GLIBC_SONAMES[@]}" "${SIMULATED_SONAMES[@]}" && continue
    [[ "$path" == "not" ]] && die "$rel needs $soname, which ldd cannot find"
    [[ -n "${copied[$soname]:-}" ]] && continue
    cp -L "$path" "$dest/lib/$soname"
    copied[$soname]=1
  done < <(ldd "$BUILD_DIR/$rel" 2>/dev/null || true)
done

# The build machine's glibc, for hosts whose own is too old for lib/.
for soname in "${GLIBC_SONAMES[@]}"; do
  # awk reads to the end (no early exit): under pipefail, ldconfig cut off by
  # SIGPIPE would fail the whole script now and then.
  src="$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64/ && !found {print $NF; found = 1}')"
  [[ -n "$src" && -e "$src" ]] && cp -L "$src" "$dest/glibc/$soname"
done
[[ -e "$dest/glibc/ld-linux-x86-64.so.2" ]] || die "no ld-linux-x86-64.so.2 to carry"

# ------------------------------------------------------------ strip, RUNPATH
mapfile -t elves < <(find "$dest" -type f -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
for elf in "${elves[@]}"; do
  chmod u+w "$elf"
  # The loader must stay whole (its symbols serve libc); the rest lose all
  # but their dynamic symbols, which are what uprobes and dlsym need.
  [[ "$elf" == */ld-linux-* ]] || strip --strip-unneeded "$elf"
done
set_runpath() { patchelf --set-rpath "$1" "$2"; }
# shellcheck disable=SC2016  # $ORIGIN is for the dynamic loader, not the shell
{
  for exe in gpuledger gpuledger-cuda-address-check; do set_runpath '$ORIGIN/lib' "$dest/$exe"; done
  set_runpath '$ORIGIN/sim/lib:$ORIGIN/lib' "$dest/gpuledger-cudasim"
  for lib in "$dest"/lib/*.so*; do set_runpath '$ORIGIN' "$lib"; done
  for lib in "$dest"/sim/lib/*.so* "$dest"/sim/nvml/*.so*; do
    [[ -L "$lib" ]] || set_runpath '$ORIGIN:$ORIGIN/../../lib' "$lib"
  done
}

# ------------------------------------------------------------ glibc needed, launcher
mapfile -t elves < <(find "$dest" -path "$dest/glibc" -prune -o -type f -exec sh -c \
  'head -c4 "$1" | grep -q ELF' _ {} \; -print)
glibc_needed="$(objdump -p "${elves[@]}" 2>/dev/null | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -n 1)"
glibc_needed="${glibc_needed#GLIBC_}"
cat >"$dest/gpuledger-run" <<EOF
#!/bin/sh
# gpuledger-run PROGRAM [ARGS...]: runs a program of this bundle (gpuledger,
# gpuledger-cuda-address-check, ...) with the host's C library when it is at
# least glibc ${glibc_needed} (what lib/ was built against), else with the copy in glibc/.
# GPULEDGER_OWN_GLIBC=1 forces the copy (the bundle's test uses it).
here="\$(cd "\$(dirname "\$0")" && pwd)"
prog="\$1"; shift
case "\$prog" in /*) ;; *) prog="\$here/\$prog" ;; esac
host="\$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print \$2}')"
newest="\$(printf '%s\n%s\n' "\${host:-0}" "${glibc_needed}" | sort -V | tail -n 1)"
if [ "\${GPULEDGER_OWN_GLIBC:-0}" != 1 ] && [ -n "\$host" ] && [ "\$newest" = "\$host" ]; then exec "\$prog" "\$@"; fi
exec "\$here/glibc/ld-linux-x86-64.so.2" --library-path "\$here/glibc:\$here/lib" "\$prog" "\$@"
EOF
chmod +x "$dest/gpuledger-run"

# ------------------------------------------------------------ manifest, size
bytes="$(du -sb "$dest" | awk '{print $1}')"
mib="$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')"
{
  echo "gpuledger $version bundle for linux-$(uname -m)"
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+dirty')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release)"
  echo "glibc needed: $glibc_needed (older hosts: gpuledger-run uses glibc/)"
  echo "size: $bytes bytes ($mib MiB)"
  echo "files:"
  (cd "$dest" && find . -type f -printf '%s %P\n' | sort -k2)
} >"$dest/MANIFEST"
awk -v b="$bytes" -v m="$MAX_MIB" 'BEGIN {exit !(b < m * 1048576)}' \
  || die "bundle is $mib MiB, over the $MAX_MIB MiB budget"
log "bundle: $dest ($mib MiB, $(find "$dest/lib" -type f | wc -l) libraries, glibc >= $glibc_needed or its own)"
echo "$dest"
