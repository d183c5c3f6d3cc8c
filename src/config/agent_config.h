#pragma once
// The agent's YAML configuration file (--config): how workloads are charged to
// teams, inside and outside Kubernetes, and which extended resources are GPUs.
// The keys, their defaults and what each does: docs/operating.md, "The
// configuration file". Every key is optional; unknown keys and wrong types
// are errors, so a typo does not silently charge a team's work to nobody.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "identity/workload.h"
#include "probes/probe_sets.h"

namespace gpuledger::config {

struct TeamRule {
  std::string pod_label_key = "team";
  std::string namespace_label_key = "team";
  // Whether a pod's own team label wins over its namespace's. Off by default:
  // a pod's labels are its author's, a namespace's its owner's.
  bool pod_label_overrides = false;
};

enum class MatchKind { kSystemdUnit, kSlurmJob, kSlurmUser, kSlurmAccount, kCgroupPrefix };

struct TeamMapping {
  MatchKind match = MatchKind::kCgroupPrefix;
  std::string pattern;
  std::string team;
};

struct AgentConfig {
  TeamRule team_rule;
  std::chrono::seconds pod_grace_period{600};
  std::vector<std::string> extra_gpu_resources;
  std::vector<std::string> dra_drivers = {"gpu.nvidia.com"};
  std::chrono::seconds pod_resources_interval{10};
  // How long the kubelet's last answer still bills the windows while its
  // socket does not answer (kubernetes/allocation_outage.h).
  std::chrono::seconds allocation_keep{600};
  std::string kai_reservation_namespace = "runai-reservation";
  // Empty: the defaults of kubernetes::RecordTrust.
  std::optional<std::vector<std::string>> hami_scheduler_managers, kai_scheduler_managers;
  std::vector<TeamMapping> teams;
  // probes.set; none: not configured (--probe-set, else auto).
  std::optional<probes::ProbeSet> probe_set;
  // allocation.source and allocation.hpc_job_mapping_dir (node/allocation_source.h);
  // empty: not configured (the command line's, else auto / none).
  std::string allocation_source;
  std::string hpc_job_mapping_dir;
};

// Throws Error naming the file, line and problem on a malformed configuration.
AgentConfig parse_agent_config(const std::string& yaml_text, const std::string& source_name = "<config>");
AgentConfig load_agent_config(const std::string& path);

// The team of a workload outside Kubernetes (or a pod the API does not know)
// from the mappings: the first that matches, else nullopt.
// `slurm_account`: the job's account from Slurm's controller ("" unknown).
std::optional<std::string> team_from_mappings(const identity::Workload& workload,
                                              const std::vector<TeamMapping>& mappings,
                                              const std::string& slurm_account = "");

// The numeric uid a Slurm cgroup path carries (".../uid_1000/job_5/..."), if any.
std::optional<unsigned> slurm_uid_from_path(const std::string& cgroup_path);

}  // namespace gpuledger::config
