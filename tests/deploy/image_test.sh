#!/usr/bin/env bash
# Builds the OCI image (scripts/build-image.sh: Debian 12 packages, no registry)
# and runs it with podman and runc: `gpuledger --version`, then `gpuledger demo`
# inside it, whose tenants must be counted (real probes from inside a container).
# The container gets what the DaemonSet gives the agent: the host's PIDs and
# cgroups; privileged here for the demo's own cgroups. The container storage is
# mounted read-only so that the agent resolves its image's overlay layers
# without the host's /proc/1/root (unreadable on some CI sandboxes).
# Last, the fleet ledger's packing job as deploy/kubernetes/fleet-db runs it,
# against a real PostgreSQL.
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

# The packing CronJob (deploy/kubernetes/fleet-db/pack-cronjob.yaml) as its pod
# runs: its args, as nobody (65534), a read-only root, no capabilities, no new
# privileges, the connection from GPULEDGER_FLEET_DB and the password from a
# file readable by its group alone, as a login in gpuledger_maintainer, against
# a real PostgreSQL whose unix socket is mounted in.
pgbin=$(find /usr/lib/postgresql -maxdepth 2 -name bin | sort -V | tail -1)
pg=$(mktemp -d /tmp/gpuledger-image-pg-XXXXXX)
trap 'runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$pg"' EXIT
mkdir -p "$pg/sock" "$pg/secret"
chmod 755 "$pg" "$pg/sock"
chown postgres "$pg" "$pg/sock"
echo owner-secret >"$pg/owner.pw"
chown postgres "$pg/owner.pw"
runuser -u postgres -- "$pgbin/initdb" -D "$pg/data" -U gpuledger_admin --pwfile="$pg/owner.pw" \
  --auth=scram-sha-256 -E UTF8 --no-sync --locale=C >/dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg/data" -w -l "$pg/server.log" -o "-k $pg/sock -c listen_addresses=''" \
  start >/dev/null
owner=(--fleet-db "host=$pg/sock dbname=postgres user=gpuledger_admin" --fleet-db-password-file "$pg/owner.pw")
"$build/gpuledger" fleet-db migrate "${owner[@]}" >/dev/null
PGPASSWORD=owner-secret psql -qX -h "$pg/sock" -U gpuledger_admin -d postgres \
  -c "CREATE ROLE gpuledger_pack LOGIN PASSWORD 'pack-secret' IN ROLE gpuledger_maintainer"
echo pack-secret >"$pg/secret/password"
chown 0:65534 "$pg/secret/password"
chmod 0440 "$pg/secret/password"
mapfile -t args < <(sed -n '/^ *args:/,/^ *env:/s/^ *- //p' "$repo/deploy/kubernetes/fleet-db/pack-cronjob.yaml")
[[ ${args[0]:-} == fleet-db && ${args[1]:-} == pack ]] || { echo "FAIL: cannot read the CronJob's args: ${args[*]}"; exit 1; }
out=$("${podman[@]}" run --rm "${limits[@]}" --user 65534:65534 --read-only --cap-drop ALL \
  --security-opt no-new-privileges -v "$pg/sock:$pg/sock" -v "$pg/secret:/etc/gpuledger/fleet-db-maintainer:ro" \
  -e GPULEDGER_FLEET_DB="host=$pg/sock dbname=postgres user=gpuledger_pack" "gpuledger:$version" "${args[@]}" 2>&1) ||
  { echo "$out"; echo "FAIL: the packing job's command in the image"; exit 1; }
if ! grep -Eq '^packed 0 windows of 0 GPU-hours; 0 GPU-hours before [0-9T:-]+Z keep their windows in rows' <<<"$out"; then
  echo "FAIL: the packing job said: $out"
  exit 1
fi
echo "ok: the packing job ran in gpuledger:$version as 65534, read-only, as gpuledger_maintainer: $out"
