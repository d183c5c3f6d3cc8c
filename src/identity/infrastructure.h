#pragma once
// Which workloads are GPU infrastructure rather than tenants: the CUDA MPS
// control daemon and server (nvidia-cuda-mps-control, nvidia-cuda-mps-server).
// The MPS server makes CUDA calls of its own (its context, its memory) on
// behalf of every client; the clients' own calls are attributed to them. The
// server is never a tenant, never a holder, and never __unallocated__
// activity (docs/kubernetes-sharing.md, "MPS").
//
// A tenant can name its binary nvidia-cuda-mps-server, so the name is not
// enough. A workload is infrastructure only when
//   1. every process of it that the agent saw use CUDA runs an executable
//      whose real path (/proc/<pid>/exe, never argv or comm) ends in
//      /nvidia-cuda-mps-server or /nvidia-cuda-mps-control, and
//   2. it is placed where only an administrator can put it: a pod in one of
//      the configured infrastructure namespaces (--infrastructure-namespace;
//      the namespace comes from the API server by the pod's UID, which the
//      kubelet wrote into the cgroup path), or, outside Kubernetes, a host
//      cgroup (a system service or the bare hierarchy: not a container, not a
//      Slurm job, not a user's session) running an executable that root owns
//      and nobody else may write.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "identity/workload.h"
#include "identity/workload_names.h"

namespace gpuledger::identity {

// The GPU operator's and the NVIDIA device plugin's usual namespaces.
inline const std::vector<std::string> kDefaultInfrastructureNamespaces = {"gpu-operator", "nvidia-gpu-operator",
                                                                          "nvidia-device-plugin", "kube-system"};

// "nvidia-cuda-mps-server" or "nvidia-cuda-mps-control" (the file name only).
bool is_mps_executable_name(std::string_view file_name);

// Whether the executable of `pid` (its /proc exe link's file name) is an MPS
// server or control daemon; false when it cannot be read.
bool runs_mps_executable(const std::string& proc_root, uint32_t pid);
// Whether any process on the host runs nvidia-cuda-mps-control: by comm first
// (one small read per process), then by the exe link of those it names.
bool mps_control_daemon_running(const std::string& proc_root = "/proc");

struct InfrastructureOptions {
  std::vector<std::string> namespaces = kDefaultInfrastructureNamespaces;
  std::string proc_root = "/proc";
};

class InfrastructureJudge {
 public:
  explicit InfrastructureJudge(InfrastructureOptions options) : options_(std::move(options)) {}
  virtual ~InfrastructureJudge() = default;
  // `pids`: the workload's live processes that used CUDA (none: false).
  virtual bool is_infrastructure(const Workload& workload, const WorkloadNames& names,
                                 const std::vector<uint32_t>& pids) const;

 private:
  InfrastructureOptions options_;
};

}  // namespace gpuledger::identity
