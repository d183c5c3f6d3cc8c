#include "node/allocation_source.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace gpuledger::node {

std::string_view to_string(AllocationSource source) {
  switch (source) {
    case AllocationSource::kAuto: return "auto";
    case AllocationSource::kKubernetes: return "kubernetes";
    case AllocationSource::kSlurm: return "slurm";
    case AllocationSource::kHpcJobMapping: return "hpc-job-mapping";
    case AllocationSource::kNone: return "none";
  }
  return "none";
}

std::optional<AllocationSource> parse_allocation_source(std::string_view text) {
  for (auto s : {AllocationSource::kAuto, AllocationSource::kKubernetes, AllocationSource::kSlurm,
                 AllocationSource::kHpcJobMapping, AllocationSource::kNone})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

AllocationChoice choose_allocation_source(AllocationSource asked, const AllocationFacts& f) {
  if (asked != AllocationSource::kAuto) return {asked, "asked for"};
  if (f.kubelet_socket) return {AllocationSource::kKubernetes, "auto: the kubelet's pod-resources socket is here"};
  if (f.kubernetes_configured) return {AllocationSource::kKubernetes, "auto: Kubernetes is configured"};
  if (f.slurmd_running) return {AllocationSource::kSlurm, "auto: slurmd runs on this node"};
  if (f.job_mapping_dir) return {AllocationSource::kHpcJobMapping, "auto: --hpc-job-mapping-dir is given"};
  return {AllocationSource::kNone, "auto: no kubelet, no slurmd, no --hpc-job-mapping-dir"};
}

namespace {

// A process of uid 0 named slurmd: a tenant can name a process anything, but
// not run it as root.
bool root_slurmd(const std::string& proc) {
  std::error_code ec;
  size_t looked = 0;
  for (std::filesystem::directory_iterator it(proc, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    if (++looked > 1 << 20) break;
    const std::string pid = it->path().filename();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm(it->path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name != "slurmd") continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) == 0 && st.st_uid == 0) return true;
  }
  return false;
}

}  // namespace

AllocationFacts gather_allocation_facts(const std::string& pod_resources_socket, bool kubeconfig_given,
                                        bool job_mapping_dir_given, const std::string& proc) {
  AllocationFacts f;
  struct stat st {};
  f.kubelet_socket = !pod_resources_socket.empty() && ::stat(pod_resources_socket.c_str(), &st) == 0 &&
                     S_ISSOCK(st.st_mode);
  f.kubernetes_configured = kubeconfig_given || std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  f.slurmd_running = root_slurmd(proc);
  f.job_mapping_dir = job_mapping_dir_given;
  return f;
}

std::string allocation_meaning(AllocationSource source) {
  switch (source) {
    case AllocationSource::kKubernetes:
      return "the kubelet says who holds each GPU; __allocation_unknown__ holds them while it cannot be read";
    case AllocationSource::kSlurm:
      return "Slurm's controller says which job holds each GPU; __allocation_unknown__ holds them while it cannot "
             "be read";
    case AllocationSource::kHpcJobMapping:
      return "the job-mapping files say which job holds each GPU (a job only while its cgroup runs here); "
             "__allocation_unknown__ holds them while the directory cannot be read";
    case AllocationSource::kNone:
    case AllocationSource::kAuto:
      break;
  }
  return "no allocation source: busy time goes to whoever used the GPU, idle time follows the idle policy "
         "(to the window's users, else __unallocated__); never __allocation_unknown__";
}

}  // namespace gpuledger::node
