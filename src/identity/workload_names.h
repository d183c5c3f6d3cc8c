#pragma once
// Names a workload carries beyond what its cgroup path says: the Kubernetes
// namespace, pod and container, the team it is charged to, and a Slurm job's
// user and account as its controller says them (slurm/slurm_jobs.h; "" for
// any other workload, or until the controller answers). Sources of names
// (the Kubernetes API, a configured mapping) implement WorkloadNamer.
#include <string>

#include "identity/workload.h"

namespace gpuledger::identity {

struct WorkloadNames {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::string team;
  std::string slurm_user, slurm_account;
  bool operator==(const WorkloadNames&) const = default;
};

class WorkloadNamer {
 public:
  virtual ~WorkloadNamer() = default;
  // Must be cheap and thread-safe: called for every workload on every scrape.
  virtual WorkloadNames names_for(const Workload& workload) const = 0;
};

}  // namespace gpuledger::identity
