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
  // slurm_account_of: a Slurm job's account as its controller says it ("":
  // unknown), for the `slurm_account` mappings; null: none known.
  TeamNamer(std::shared_ptr<const PodDirectory> directory, config::TeamRule rule,
            std::vector<config::TeamMapping> mappings,
            std::function<std::string(const std::string& job)> slurm_account_of = nullptr);
  identity::WorkloadNames names_for(const identity::Workload& workload) const override;

 private:
  std::shared_ptr<const PodDirectory> directory_;
  config::TeamRule rule_;
  std::vector<config::TeamMapping> mappings_;
  std::function<std::string(const std::string& job)> slurm_account_of_;
};

}  // namespace gpuledger::kubernetes
