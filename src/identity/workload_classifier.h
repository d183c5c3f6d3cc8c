#pragma once
// Turns a cgroup path (v2, or a v1 hierarchy path on v1-only hosts) into the
// workload it belongs to. Pure and total: any byte string gives a Workload
// with a non-empty id; nothing is thrown except std::bad_alloc.
//
// Identity cannot be forged from below: a tenant can create cgroups inside
// its own (a container with a writable cgroupfs, a Delegate=yes service, a
// user's systemd manager) and name them anything. So each kind is recognised
// only where its owner puts it, and the outermost match wins:
//   1. Kubernetes pod: only in the kubepods hierarchy at the cgroup root
//      (/kubepods, /kubepods.slice), under /kubelet.slice, under containerd's
//      own service (colon notation), or under a configured cgroup root
//      (kind, k3d: a node that is itself a container); and only at the depth
//      the kubelet uses (kubepods/[qos]/pod). The container is the first
//      container cgroup below the pod; anything deeper belongs to it.
//   2. Slurm job: job_<n> at the place slurmd puts it (/slurm*/uid_<u>/job_<n>,
//      /system.slice/*slurmstepd.scope/job_<n>).
//   3. The outermost container outside Kubernetes.
//   4. The outermost systemd .service/.scope. Inside a user's manager
//      (user@<uid>.service) everything is that user's: units and containers
//      there are named with the user's unit in front, so no user can take a
//      system unit's or another container's name.
//   5. The path itself.
#include <string>
#include <string_view>
#include <vector>

#include "identity/workload.h"

namespace gpuledger::identity {

struct ClassifierOptions {
  // Extra places where a node's hierarchy starts (a kubelet --cgroup-root,
  // a kind or k3d node that runs inside a container), as cgroup paths:
  // "/kubelet", "/system.slice/docker-<id>.scope". Pods, Slurm jobs and
  // containers are recognised at the top and just below each of these.
  std::vector<std::string> cgroup_roots;
};

Workload classify_cgroup_path(std::string_view cgroup_path, const ClassifierOptions& options = {});

}  // namespace gpuledger::identity
