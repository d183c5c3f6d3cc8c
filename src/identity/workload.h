#pragma once
// The workload identity that GPU activity is attributed to. Produced from a
// cgroup path by classify_cgroup_path() (identity/workload_classifier.h).
#include <string>
#include <string_view>

namespace gpuledger::identity {

enum class WorkloadKind {
  kKubernetes,  // a pod, or a container inside a pod
  kContainer,   // a container outside Kubernetes (docker, podman, bare CRI)
  kSystemd,     // a systemd service or scope
  kSlurm,       // a Slurm job (and step)
  kCgroup,      // nothing recognised: identified by the cgroup path itself
};

// "kubernetes", "container", "systemd", "slurm", "cgroup"; "unknown" only for
// a value outside the enum (a bad cast), so callers never get an empty name.
constexpr std::string_view to_string(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kKubernetes: return "kubernetes";
    case WorkloadKind::kContainer: return "container";
    case WorkloadKind::kSystemd: return "systemd";
    case WorkloadKind::kSlurm: return "slurm";
    case WorkloadKind::kCgroup: return "cgroup";
  }
  return "unknown";
}

// Only the fields that belong to `kind` are filled; the others stay empty
// (e.g. a Kubernetes container's systemd scope is not put in systemd_unit).
struct Workload {
  // Stable readable id, the primary key everywhere:
  //   k8s/<pod-uid>/<container-id>, k8s/<pod-uid>, container/<container-id>,
  //   systemd/<unit>, slurm/<job>, cgroup<path> ("cgroup/" for the root).
  std::string id;
  WorkloadKind kind = WorkloadKind::kCgroup;
  std::string cgroup_path;        // the input, normalised: leading '/', no trailing '/', no "//"
  std::string pod_uid;            // lowercase; 8-4-4-4-12 with dashes, or 32 hex for static pods
  std::string container_id;       // lowercase hex, no runtime prefix
  std::string container_runtime;  // "containerd", "cri-o", "docker", "podman", or "" if the path doesn't say
  std::string qos_class;          // "guaranteed", "burstable", "besteffort" (Kubernetes only)
  std::string systemd_unit;       // e.g. "nginx.service", "session-3.scope"
  std::string slurm_job;          // e.g. "1234"
  std::string slurm_step;         // e.g. "0", "batch", "extern"; "" when not in a step

  bool operator==(const Workload&) const = default;
};

}  // namespace gpuledger::identity
