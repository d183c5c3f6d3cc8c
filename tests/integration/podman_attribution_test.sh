#!/usr/bin/env bash
# integration.podman: the agent against a real container runtime from Debian
# (podman with runc and the cgroupfs manager). An image built here from local
# files carries its own libcuda copy (the driver simulator); two containers of
# it run tenants. Checked:
#   - discovery through the containers' roots, with one attachment for the
#     image's one libcuda (both containers' overlays share its layer file);
#   - exact counts per container (container/<id> workloads);
#   - importing and removing an image while the agent runs never fails (the
#     probes pin no mount);
#   - `podman rmi` releases the file: the agent detaches it once it is deleted.
# Usage: podman_attribution_test.sh BUILD_DIR
set -euo pipefail
build="$(realpath "$1")"
skip() { echo "SKIP: $*"; [[ ${CI:-} == true ]] && exit 1; exit 77; }
fail() { echo "FAIL: $*" >&2; [[ -n ${agent_log:-} && -f $agent_log ]] && tail -30 "$agent_log" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || skip "needs root (BPF, podman)"
for tool in podman runc curl jq; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done

podman=(podman --runtime runc --cgroup-manager cgroupfs)
limits=(--ulimit nofile=1024:4096 --ulimit nproc=4096:4096)  # podman's defaults exceed some hosts' hard limits
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-podman.XXXXXX")"
tag="localhost/gpuledger-tenant-$$:1"
agent_log="$work/agent.log"
agent_pid=""
cleanup() {
  [[ -n $agent_pid ]] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  "${podman[@]}" rm -f gl-tenant-a-$$ gl-tenant-b-$$ >/dev/null 2>&1 || true
  "${podman[@]}" rmi -f "$tag" "localhost/gpuledger-tenant-$$:2" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The image: the workload generator, its libraries, and libcuda where its
# RUNPATH ($ORIGIN/sim/lib) looks.
root="$work/root"
mkdir -p "$root/bin/sim/lib"
cp "$build/gpuledger-cudasim" "$root/bin/"
cp -L "$build/sim/lib/libcuda.so.1" "$root/bin/sim/lib/libcuda.so.1"
while read -r lib; do
  cp --parents -L "$lib" "$root/"
done < <(ldd "$build/gpuledger-cudasim" | awk '$1 !~ /libcuda/ && $3 ~ /^\// {print $3} $1 ~ /^\/lib/ {print $1}')
tar -C "$root" -c . | "${podman[@]}" import -q - "$tag" >/dev/null || fail "podman import"

# The agent, discovering on its own (no --cuda-lib), on a free port.
"$build/gpuledger" agent --listen 127.0.0.1:0 --store "" --no-nvml --pod-resources-socket "" --no-bpf-pins \
  --scan-interval-ms 300 >"$agent_log" 2>&1 &
agent_pid=$!
port=""
for _ in $(seq 100); do
  port="$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$agent_log" | head -n1)"
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || fail "the agent did not start"
api() { curl -sf "http://127.0.0.1:$port/api/v1/workloads"; }
poll() {  # poll SECONDS JQ-EXPR: until the expression is true on the workloads document
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    api | jq -e "$2" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
image_lib='[.libraries[] | select(.path | test("/bin/sim/lib/libcuda.so.1"))]'

# Two containers of the image. Each waits on stdin after loading the driver,
# until the agent covers the library, then launches.
run_tenant() {  # run_tenant NAME LAUNCHES
  { poll 20 "$image_lib | length >= 1" || true; echo go; } |
    "${podman[@]}" run -i --name "$1" "${limits[@]}" --network none "$tag" \
      /bin/gpuledger-cudasim --quiet "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x$2; sync" >/dev/null
}
run_tenant "gl-tenant-a-$$" 7 &
tenant_a=$!
run_tenant "gl-tenant-b-$$" 11 &
tenant_b=$!
wait "$tenant_a" || fail "tenant a"
wait "$tenant_b" || fail "tenant b"

id_a="$("${podman[@]}" inspect --format '{{.Id}}' "gl-tenant-a-$$")"
id_b="$("${podman[@]}" inspect --format '{{.Id}}' "gl-tenant-b-$$")"
launches() { api | jq --arg w "container/$1" '[.workloads[] | select(.workload == $w) | .counters.kernel_launches] | add // -1'; }
poll 5 "[.workloads[] | select(.workload == \"container/$id_b\")] | length == 1" || fail "no workload for b"
[[ "$(launches "$id_a")" == 7 ]] || fail "container a: $(launches "$id_a") launches, not 7"
[[ "$(launches "$id_b")" == 11 ]] || fail "container b: $(launches "$id_b") launches, not 11"
runtime="$(api | jq -r --arg w "container/$id_a" '.workloads[] | select(.workload == $w) | .identity.container_runtime')"
[[ $runtime == podman ]] || fail "container a's runtime is '$runtime', not podman"
attached="$(api | jq "$image_lib | length")"
[[ $attached == 1 ]] || fail "the image's libcuda has $attached attachments, not 1 (two overlays, one layer file)"

# Image imports and removals while the agent runs: nothing of the runtime is pinned.
tar -C "$root" -c . | "${podman[@]}" import -q - "localhost/gpuledger-tenant-$$:2" >/dev/null || fail "import while probing"
"${podman[@]}" rmi "localhost/gpuledger-tenant-$$:2" >/dev/null || fail "rmi of an unused image"

# rmi of the image the tenants ran: its layer file goes, and so do the probes.
"${podman[@]}" rm "gl-tenant-a-$$" "gl-tenant-b-$$" >/dev/null || fail "podman rm"
"${podman[@]}" rmi "$tag" >/dev/null || fail "podman rmi failed while the agent runs"
poll 10 "$image_lib | length == 0" || fail "the removed image's libcuda is still probed"
# The page is read whole before it is searched: `grep -q` stops at the first
# match and, under pipefail, curl's broken pipe would fail the check.
detached_counted() {
  local page
  page="$(curl -sf "http://127.0.0.1:$port/metrics")" || return 1
  grep -q '^gpuledger_cuda_libraries_detached_total [1-9]' <<<"$page"
}
deadline=$((SECONDS + 5))
until detached_counted; do
  ((SECONDS < deadline)) || fail "gpuledger_cuda_libraries_detached_total did not count it"
  sleep 0.1
done
echo "PASS: two podman containers of one image: 7 and 11 launches, one attachment; import, rmi while probing"
