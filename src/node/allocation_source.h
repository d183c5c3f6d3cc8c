#pragma once
// Which source says who holds each GPU (--allocation-source, or
// allocation.source in --config):
//   kubernetes       the kubelet's Pod Resources API (src/kubernetes)
//   slurm            the Slurm jobs on this node, from the controller (src/slurm)
//   hpc-job-mapping  the job-mapping files a Slurm prolog writes (slurm/job_mapping.h)
//   none             no source: the workloads that used a GPU in a window hold it
//                    (busy time to them, idle by the idle policy; no user: __unallocated__)
//   auto             the first of: Kubernetes where a kubelet answers or is
//                    configured, Slurm where slurmd runs on the node, the
//                    job-mapping files where --hpc-job-mapping-dir is given, else none.
// __allocation_unknown__ then means only that the chosen source is down.
#include <optional>
#include <string>
#include <string_view>

namespace gpuledger::node {

enum class AllocationSource { kAuto, kKubernetes, kSlurm, kHpcJobMapping, kNone };

std::string_view to_string(AllocationSource source);  // "auto", "kubernetes", "slurm", "hpc-job-mapping", "none"
std::optional<AllocationSource> parse_allocation_source(std::string_view text);

// What auto looks at on this node.
struct AllocationFacts {
  bool kubelet_socket = false;         // the pod-resources socket is there (a kubelet, even restarting)
  bool kubernetes_configured = false;  // --kubeconfig, a --pod-resources-socket named, or in a cluster
  bool slurmd_running = false;         // a root process named slurmd
  bool job_mapping_dir = false;        // --hpc-job-mapping-dir given
};

struct AllocationChoice {
  AllocationSource source = AllocationSource::kNone;
  std::string why;  // in words, for the log and `doctor`
};

// Pure: `asked` unless it is auto; auto by the facts, in the order above.
AllocationChoice choose_allocation_source(AllocationSource asked, const AllocationFacts& facts);

// The facts on this node: the socket at `pod_resources_socket` ("" none),
// $KUBERNETES_SERVICE_HOST, a root slurmd under `proc` ("/proc").
AllocationFacts gather_allocation_facts(const std::string& pod_resources_socket, bool kubeconfig_given,
                                        bool job_mapping_dir_given, const std::string& proc = "/proc");

// What a bill means under the choice, for `doctor` (one sentence).
std::string allocation_meaning(AllocationSource source);

}  // namespace gpuledger::node
