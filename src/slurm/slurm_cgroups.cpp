#include "slurm/slurm_cgroups.h"

#include <filesystem>
#include <functional>

#include "identity/workload_classifier.h"

namespace gpuledger::slurm {
namespace fs = std::filesystem;
namespace {

// Each subdirectory of `dir` (no links: cgroupfs has none, a stand-in gets
// none followed), at most `budget` entries looked at in all.
void each_dir(const fs::path& dir, size_t& budget, const std::function<void(const std::string&)>& f) {
  std::error_code ec;
  fs::directory_iterator it(dir, fs::directory_options::none, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (budget == 0) return;
    --budget;
    std::error_code type_ec;
    if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) f(it->path().filename().string());
  }
}

void add_job(const std::string& relative, std::map<std::string, LiveJob>& out) {
  if (out.size() >= kMaxJobs) return;
  const identity::Workload w = identity::classify_cgroup_path(relative);
  if (w.kind != identity::WorkloadKind::kSlurm || w.slurm_job.empty()) return;
  LiveJob job{w.slurm_job, w.cgroup_path, std::nullopt};
  if (const auto at = relative.find("/uid_"); at != std::string::npos) {
    const auto end = relative.find('/', at + 1);
    try {
      job.uid = static_cast<unsigned>(std::stoul(relative.substr(at + 5, end - at - 5)));
    } catch (const std::exception&) {
    }
  }
  out.try_emplace(job.job, std::move(job));
}

}  // namespace

void add_live_slurm_jobs(const std::string& mount, std::map<std::string, LiveJob>& out) {
  if (mount.empty()) return;
  size_t budget = kMaxEntries;
  const fs::path root(mount);
  each_dir(root, budget, [&](const std::string& top) {
    if (top.starts_with("slurm")) {  // slurm/uid_<u>/job_<n>, slurm_<node>/...
      each_dir(root / top, budget, [&](const std::string& uid) {
        if (!uid.starts_with("uid_")) return;
        each_dir(root / top / uid, budget, [&](const std::string& job) {
          if (job.starts_with("job_")) add_job("/" + top + "/" + uid + "/" + job, out);
        });
      });
    } else if (top == "system.slice") {  // system.slice/<...>slurmstepd.scope/job_<n>
      each_dir(root / top, budget, [&](const std::string& scope) {
        if (!scope.ends_with("slurmstepd.scope")) return;
        each_dir(root / top / scope, budget, [&](const std::string& job) {
          if (job.starts_with("job_")) add_job("/" + top + "/" + scope + "/" + job, out);
        });
      });
    }
  });
}

std::map<std::string, LiveJob> live_slurm_jobs(const identity::CgroupMounts& mounts) {
  std::map<std::string, LiveJob> out;
  add_live_slurm_jobs(mounts.v2, out);
  add_live_slurm_jobs(mounts.v1, out);
  return out;
}

}  // namespace gpuledger::slurm
