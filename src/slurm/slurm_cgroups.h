#pragma once
// The Slurm jobs running on this node, as their cgroups say: the places
// slurmd (or a site's prolog, as in tests/slurm) puts a job, and only those:
// <mount>/slurm*/uid_<u>/job_<n> and <mount>/system.slice/*slurmstepd.scope/job_<n>
// (identity/workload_classifier.h recognises the same). Tenants cannot create
// cgroups there, only inside their own job's, so a job id found here is one
// Slurm started. Bounded: at most kMaxJobs jobs, kMaxEntries entries looked at.
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "identity/cgroup_fs.h"

namespace gpuledger::slurm {

inline constexpr size_t kMaxJobs = 65536;
inline constexpr size_t kMaxEntries = 262144;

struct LiveJob {
  std::string job;          // "1234"
  std::string cgroup_path;  // relative to its mount, leading '/': ".../job_1234"
  std::optional<unsigned> uid;  // from uid_<u>, where the path has it
};

// By job id; the v2 hierarchy first, then the v1 one (a job in both is one).
std::map<std::string, LiveJob> live_slurm_jobs(const identity::CgroupMounts& mounts);

// The same under one mount point (for tests: any directory laid out as cgroupfs).
void add_live_slurm_jobs(const std::string& mount, std::map<std::string, LiveJob>& out);

}  // namespace gpuledger::slurm
