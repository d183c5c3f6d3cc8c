#pragma once
// Names the workloads behind the kernel's cgroup keys. The kernel side hands
// over each new cgroup's path when it first sees it (learn()); a key whose
// event was lost is looked up in the cgroup tree instead (resolve()).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "identity/cgroup_fs.h"
#include "identity/workload.h"
#include "identity/workload_classifier.h"

namespace gpuledger::identity {

class WorkloadDirectory {
 public:
  explicit WorkloadDirectory(CgroupMounts mounts, ClassifierOptions classifier = {})
      : mounts_(std::move(mounts)), classifier_(std::move(classifier)) {}

  // Records the path of a key (v2 id, or v1 id with GL_CGROUP_V1_BIT).
  void learn(uint64_t key, const std::string& cgroup_path);
  // The workload of a key; unknown keys are resolved through the cgroup tree
  // and, failing that, named by their id.
  Workload resolve(uint64_t key);
  // Whether the cgroup of a key still exists (false once it was removed).
  bool still_exists(uint64_t key);
  // Drops what is known of a key whose workload is gone for good (retired):
  // the directory holds the live workloads, not history.
  void forget(uint64_t key);
  size_t size();

 private:
  const std::string& mount_for(uint64_t key) const;
  CgroupMounts mounts_;
  ClassifierOptions classifier_;
  std::mutex mu_;
  std::map<uint64_t, Workload> known_;
};

// The workload of the agent's overflow bucket (key 0): activity counted when
// the workload map was full.
Workload overflow_workload();

}  // namespace gpuledger::identity
