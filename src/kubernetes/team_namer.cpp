#include "kubernetes/team_namer.h"

namespace gpuledger::kubernetes {

TeamNamer::TeamNamer(std::shared_ptr<const PodDirectory> directory, config::TeamRule rule,
                     std::vector<config::TeamMapping> mappings, SlurmJobLookup slurm_job_of)
    : directory_(std::move(directory)),
      rule_(std::move(rule)),
      mappings_(std::move(mappings)),
      slurm_job_of_(std::move(slurm_job_of)) {}

identity::WorkloadNames TeamNamer::names_for(const identity::Workload& w) const {
  identity::WorkloadNames names;
  if (w.kind == identity::WorkloadKind::kKubernetes && directory_ && !w.pod_uid.empty()) {
    if (auto pod = directory_->find(w.pod_uid, w.container_id)) {
      names.namespace_name = pod->namespace_name;
      names.pod = pod->pod;
      names.container = pod->container;
      names.team = directory_->team(rule_, *pod);
      return names;
    }
  }
  if (slurm_job_of_ && w.kind == identity::WorkloadKind::kSlurm) {
    const SlurmJobNames job = slurm_job_of_(w.slurm_job);
    names.slurm_user = job.user;
    names.slurm_account = job.account;
  }
  if (auto team = config::team_from_mappings(w, mappings_, names.slurm_account)) names.team = *team;
  return names;
}

}  // namespace gpuledger::kubernetes
