#pragma once
// Turns a cgroup path (v2, or a v1 hierarchy path on v1-only hosts) into the
// workload it belongs to. Pure and total: any byte string gives a Workload
// with a non-empty id; nothing is thrown except std::bad_alloc.
//
// Precedence when several shapes appear in one path (outermost wins among
// orchestrators, because that is the identity the host knows about):
//   1. Kubernetes pod anywhere in the path (also nested under docker/kind/k3s
//      prefixes); the container is the first container cgroup below the pod.
//   2. Slurm job (job_<n> below a slurm* cgroup).
//   3. The outermost container outside Kubernetes.
//   4. The deepest systemd .service/.scope.
//   5. The path itself.
#include <string_view>

#include "identity/workload.h"

namespace gpuledger::identity {

Workload classify_cgroup_path(std::string_view cgroup_path);

}  // namespace gpuledger::identity
