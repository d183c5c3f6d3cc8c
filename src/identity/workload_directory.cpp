#include "identity/workload_directory.h"

#include "cuda_probes.h"
#include "identity/workload_classifier.h"

namespace gpuledger::identity {

Workload overflow_workload() {
  Workload w;
  w.id = "__overflow__";
  w.kind = WorkloadKind::kCgroup;
  return w;
}

const std::string& WorkloadDirectory::mount_for(uint64_t key) const {
  return (key & GL_CGROUP_V1_BIT) ? mounts_.v1 : mounts_.v2;
}

void WorkloadDirectory::learn(uint64_t key, const std::string& cgroup_path) {
  std::lock_guard lock(mu_);
  known_[key] = classify_cgroup_path(cgroup_path, classifier_);
}

Workload WorkloadDirectory::resolve(uint64_t key) {
  if (key == 0) return overflow_workload();
  {
    std::lock_guard lock(mu_);
    if (auto it = known_.find(key); it != known_.end()) return it->second;
  }
  const std::string& mount = mount_for(key);
  auto path = mount.empty() ? std::nullopt : find_cgroup_path(mount, key & ~GL_CGROUP_V1_BIT);
  if (path) {
    learn(key, *path);
    return resolve(key);
  }
  // Gone before we could name it, and its kernel-side event was lost: say so.
  Workload w;
  w.kind = WorkloadKind::kCgroup;
  w.id = "cgroup-id/" + std::to_string(key & ~GL_CGROUP_V1_BIT);
  return w;
}

bool WorkloadDirectory::still_exists(uint64_t key) {
  std::string path;
  {
    std::lock_guard lock(mu_);
    auto it = known_.find(key);
    if (it != known_.end()) path = it->second.cgroup_path;
  }
  const std::string& mount = mount_for(key);
  if (mount.empty()) return true;
  if (path.empty()) {
    // Never named (its event lost, gone before a scrape): the kernel says
    // whether the id is gone; unsure, keep it.
    return cgroup_by_id(mount, key & ~GL_CGROUP_V1_BIT).state != CgroupById::kGone;
  }
  return cgroup_id_of(mount + (path == "/" ? "" : path)) == (key & ~GL_CGROUP_V1_BIT);
}

void WorkloadDirectory::forget(uint64_t key) {
  std::lock_guard lock(mu_);
  known_.erase(key);
}

size_t WorkloadDirectory::size() {
  std::lock_guard lock(mu_);
  return known_.size();
}

}  // namespace gpuledger::identity
