#!/usr/bin/env bash
# Builds the OCI image (scripts/build-image.sh: Debian 12 packages, no registry)
# and runs it with podman and runc: `gpuledger --version`, then `gpuledger demo`
# inside it, whose tenants must be counted (real probes from inside a container).
# The container gets what the DaemonSet gives the agent: the host's PIDs and
# cgroups; privileged here for the demo's own cgroups. The container storage is
# mounted read-only so that the agent resolves its image's overlay layers
# without the host's /proc/1/root (unreadable on some CI sandboxes).
# Usage: image_test.sh REPO_ROOT BUILD_DIR VERSION
set -euo pipefail
[[ ${GPULEDGER_SKIP_IMAGE_TEST:-} == 1 ]] && { echo "skipped: GPULEDGER_SKIP_IMAGE_TEST=1"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "needs root (mmdebstrap, podman, the demo's BPF)"; [[ ${CI:-} == true ]] && exit 1; exit 77; }
repo=$1 build=$2 version=$3
podman=(podman --runtime runc --cgroup-manager cgroupfs)
limits=(--ulimit nofile=1024:4096 --ulimit nproc=4096:4096)  # podman's defaults exceed some hosts' hard limits

BUILD_DIR=$build "$repo/scripts/build-image.sh"

got=$("${podman[@]}" run --rm "${limits[@]}" "gpuledger:$version" --version)
[[ $got == "gpuledger $version" ]] || { echo "FAIL: --version in the image says '$got'"; exit 1; }
echo "ok: gpuledger:$version --version: $got"

# The image is a clean Debian 12 root into which apt installed the package:
# installed, its conffile, unit and the demo's simulators where they belong.
"${podman[@]}" run --rm "${limits[@]}" --entrypoint /bin/sh "gpuledger:$version" -c '
  set -e
  test "$(dpkg-query -W -f="\${Status} \${Version}" gpuledger)" = "install ok installed '"$version"'"
  grep -qx /etc/gpuledger/config.yaml /var/lib/dpkg/info/gpuledger.conffiles
  test -f /etc/gpuledger/config.yaml -a -f /lib/systemd/system/gpuledger.service
  test -x /usr/lib/gpuledger/gpuledger-cudasim -a -f /usr/lib/gpuledger/sim/lib/libcuda.so.1
  test -f /usr/lib/gpuledger/sim/nvml/libnvidia-ml.so.1 -a -f /usr/share/gpuledger/prometheus/gpuledger-rules.yaml
  ! command -v gcc' || { echo "FAIL: the package's files in the image"; exit 1; }
echo "ok: the package is installed in the clean root, with its conffile, unit and simulators, and no compiler"

storage=$("${podman[@]}" info --format '{{.Store.GraphRoot}}')
out=$("${podman[@]}" run --rm "${limits[@]}" --privileged --pid=host --cgroupns=host \
  -v /sys/fs/cgroup:/sys/fs/cgroup -v "$storage:$storage:ro" \
  "gpuledger:$version" demo --seconds 5 --listen 127.0.0.1:0 2>&1)
echo "$out" | tail -25
grep -q 'Chargeback of the simulated tenants' <<<"$out" || { echo "FAIL: the demo did not print its bill"; exit 1; }
# Launches counted by the probes from inside the container: the demo's final
# counts, summed down its LAUNCHES column (right-aligned under its header; the
# tenant names before it have spaces).
launches=$(awk '/^Final counts/ {f = 1}
  f && /^TENANT/ {e = index($0, "LAUNCHES") + length("LAUNCHES") - 1; next}
  f && e && NF == 0 {exit}
  f && e {n = split(substr($0, 1, e), a, " "); s += a[n]}
  END {print s + 0}' <<<"$out")
[[ ${launches:-0} -gt 0 ]] || { echo "FAIL: no launches counted inside the container"; exit 1; }
echo "ok: the demo ran in gpuledger:$version and counted $launches launches"

# Removing the package leaves no probe: in a privileged container with a bpffs
# of its own (which the agent mounts), an agent pins its data plane (--keep-pins-on-exit, as the unit
# runs it) and is killed; `dpkg -r gpuledger` (its prerm) removes the pins.
# shellcheck disable=SC2016 # expanded by the container's sh
out=$("${podman[@]}" run --rm "${limits[@]}" --privileged --entrypoint /bin/sh "gpuledger:$version" -c '
  set -e
  # No bpffs in the container yet: the agent mounts one at /sys/fs/bpf (the image has no mount(8)).
  gpuledger agent --listen 127.0.0.1:0 --no-nvml --pod-resources-socket "" --no-discovery --store "" --no-xid \
    --cuda-lib /usr/lib/gpuledger/sim/lib/libcuda.so.1 --keep-pins-on-exit >/tmp/agent.log 2>&1 &
  agent=$!
  i=0
  until grep -q "serving http" /tmp/agent.log; do i=$((i + 1)); [ $i -lt 1000 ] || exit 3; sleep 0.02; done
  kill -KILL $agent
  wait $agent || true
  echo "pins before: $(find /sys/fs/bpf/gpuledger -type f | wc -l)"
  dpkg -r gpuledger
  test ! -e /sys/fs/bpf/gpuledger && echo "pins after: none"' 2>&1) ||
  { echo "$out"; echo "FAIL: dpkg -r gpuledger did not remove the pinned data plane"; exit 1; }
if ! grep -q "pins after: none" <<<"$out" || ! grep -q "^removed [0-9]* BPF pins under /sys/fs/bpf/gpuledger" <<<"$out"; then
  echo "FAIL: dpkg -r gpuledger: $out"
  exit 1
fi
echo "ok: dpkg -r gpuledger removed the pins a killed agent left ($(grep '^pins before' <<<"$out"))"
