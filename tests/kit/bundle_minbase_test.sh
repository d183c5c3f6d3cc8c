#!/usr/bin/env bash
# kit.bundle_minbase: the bundle (scripts/bundle.sh) runs where none of the
# project's Debian packages are: a `mmdebstrap --variant=minbase` Debian 12
# root filesystem (cached under the build tree by minbase_rootfs.sh). Inside a
# chroot with /proc, /sys (with /sys/fs/cgroup and /sys/kernel/btf) and /dev
# bind-mounted in a private mount namespace (gone when the test ends):
#   - every library the bundle's programs need resolves inside the bundle or
#     to the root filesystem's glibc, and the rootfs has no libbpf of its own;
#   - `gpuledger doctor` says the attribution plane works (real BPF);
#   - `gpuledger doctor` runs with the bundle's own glibc too (gpuledger-run);
#   - `gpuledger demo` runs its simulated tenants and prints the bill.
# Root only. Without mmdebstrap or root it skips, and under CI=true it fails.
# Usage: bundle_minbase_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1" build="$(realpath "$2")"

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() {
  [[ "${CI:-}" == true ]] && fail "$* (CI=true: this test may not skip)"
  echo "SKIP: $*"
  exit 77
}
[[ $EUID -eq 0 ]] || skip "needs root (chroot, mounts, eBPF)"
command -v unshare >/dev/null || skip "needs unshare (util-linux)"
tarball="$build/kit-rootfs/bookworm-minbase.tar"
"$src/tests/kit/minbase_rootfs.sh" "$tarball" || skip "no minbase root filesystem (mmdebstrap failed)"

work="$(mktemp -d "$build/kit-rootfs/run.XXXXXX")"
cleanup() {
  # The mounts live in the child's namespace only; never delete through one.
  if grep -qF " $work/" /proc/self/mountinfo; then
    echo "WARNING: mounts remain under $work: not deleting it" >&2
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

started=$SECONDS
bundle="$("$src/scripts/bundle.sh" --no-build --build-dir "$build" --out "$work/dist")"
root="$work/root"
mkdir -p "$root"
tar -xf "$tarball" -C "$root"
[[ -x "$root/bin/sh" ]] || fail "the root filesystem has no /bin/sh"
[[ ! -e "$root/usr/lib/x86_64-linux-gnu/libbpf.so.1" ]] || fail "the minbase rootfs should not have libbpf"
cp -a "$bundle" "$root/opt/gpuledger"

cat >"$root/run-bundle.sh" <<'INNER'
set -eu
cd /opt/gpuledger
echo "== libraries"
for prog in gpuledger gpuledger-cudasim gpuledger-cuda-address-check; do
  out="$(ldd "./$prog")"
  echo "$out" | grep -q 'not found' && { echo "$prog: a library is missing"; echo "$out"; exit 1; }
  # Every resolved library is the bundle's, or glibc from the root filesystem.
  echo "$out" | awk '$2 == "=>" && $3 !~ /^\/opt\/gpuledger\// && $1 !~ /^(libc|libm|libpthread|libdl|librt|libresolv)\.so/ {print "FOREIGN " $0}' | grep FOREIGN && exit 1
done
echo "libraries: all in the bundle or glibc"
grep -q ' cgroup2 ' /proc/self/mountinfo || { echo "no cgroup2 mount visible"; exit 1; }
test -r /sys/kernel/btf/vmlinux || { echo "no /sys/kernel/btf/vmlinux"; exit 1; }
echo "== doctor"
./gpuledger doctor
echo "== doctor with the bundle's glibc"
GPULEDGER_OWN_GLIBC=1 ./gpuledger-run gpuledger doctor >/dev/null
echo "own glibc: ok"
echo "== demo"
./gpuledger demo --seconds 4 --listen 127.0.0.1:0
INNER

rc=0
# shellcheck disable=SC2016  # the inner script expands its own arguments
unshare --mount --propagation private -- bash -c '
  set -e
  r="$1"
  mount --rbind /proc "$r/proc"
  mount --rbind /sys "$r/sys"   # recursive: /sys/fs/cgroup (every hierarchy), /sys/kernel/btf, /sys/fs/bpf
  mount --rbind /dev "$r/dev"
  exec chroot "$r" /bin/sh /run-bundle.sh' _ "$root" >"$work/out.log" 2>&1 || rc=$?
cat "$work/out.log"
[[ $rc -eq 0 ]] || fail "the bundle failed in the minbase chroot (rc $rc)"
grep -q '^libraries: all in the bundle or glibc' "$work/out.log" || fail "library check did not run"
grep -q 'Chargeback of the simulated tenants' "$work/out.log" || fail "the demo printed no chargeback"
grep -q 'TOTAL' "$work/out.log" || fail "the demo's bill has no TOTAL"
echo "PASS: bundle $(basename "$bundle") runs doctor and demo in a minbase chroot ($((SECONDS - started)) s)"
