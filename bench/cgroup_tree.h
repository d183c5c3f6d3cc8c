#pragma once
// The benchmark's own corner of the cgroup v2 hierarchy. Every cgroup the
// benchmark makes lives under <cgroup2 mount>/gpuledger-bench, and the whole
// subtree is removed when this object goes away -- after this process has been
// moved back to the root -- so a failed measurement leaves nothing behind.
#include <string>

namespace gpuledger::bench {

class BenchCgroups {
 public:
  // Finds the cgroup2 mount in /proc/self/mountinfo, clears what an earlier
  // (killed) run may have left, and creates the parent. Throws Error.
  BenchCgroups();
  ~BenchCgroups();
  BenchCgroups(const BenchCgroups&) = delete;
  BenchCgroups& operator=(const BenchCgroups&) = delete;

  // mkdir -p of `relative` under the parent; returns the directory.
  std::string make(const std::string& relative) const;
  // rmdir of `relative` and everything below it (they must hold no process).
  void remove(const std::string& relative) const;
  const std::string& mount() const { return mount_; }
  const std::string& parent() const { return parent_; }

  // Moves the calling process (all its threads) into the cgroup at `dir`.
  static void move_self_to(const std::string& dir);
  // The same, but safe after fork(): no allocation, no exceptions.
  static bool move_self_to_noexcept(const char* dir);

 private:
  std::string mount_, parent_;
};

}  // namespace gpuledger::bench
