#pragma once
// The agent's WorkloadNamer: Kubernetes names from the PodDirectory and the
// team by the configured rule; outside Kubernetes (or for a pod the API does
// not know yet) namespace/pod/container stay empty and the team comes from the
// configuration's mappings of workload patterns.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/agent_config.h"
#include "identity/workload_names.h"
#include "kubernetes/pod_directory.h"

namespace gpuledger::kubernetes {

class TeamNamer : public identity::WorkloadNamer {
 public:
  // directory may be null (not on Kubernetes).
  // slurm_job_of: a Slurm job's user and account as its controller says them
  // ("": unknown), for the names and the `slurm_account` mappings; null: none known.
  struct SlurmJobNames {
    std::string user, account;
  };
  using SlurmJobLookup = std::function<SlurmJobNames(const std::string& job)>;
  TeamNamer(std::shared_ptr<const PodDirectory> directory, config::TeamRule rule,
            std::vector<config::TeamMapping> mappings, SlurmJobLookup slurm_job_of = nullptr);
  identity::WorkloadNames names_for(const identity::Workload& workload) const override;

 private:
  std::shared_ptr<const PodDirectory> directory_;
  config::TeamRule rule_;
  std::vector<config::TeamMapping> mappings_;
  SlurmJobLookup slurm_job_of_;
};

}  // namespace gpuledger::kubernetes
