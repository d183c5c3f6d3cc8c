#pragma once
// The owners of CUDA processes that exited lately, so NVML's samples of a
// process that started and ended between two observations still find its
// workload (docs/ledger.md "Processes NVML sees"). Bounded, for a tenant can
// start processes as fast as it likes: at most kMaxEntries, each kept
// kKeepUs after its exit; the oldest go first, counted in evicted(). A
// record evicted early leaves that process's time __unattributed__, never
// another tenant's.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "attribution/snapshot.h"

namespace gpuledger::attribution {

class ExitedProcesses {
 public:
  static constexpr size_t kMaxEntries = 16384;
  // Covers an observation interval many times over: the ledger reads NVML's
  // totals every few seconds, and the NVML client keeps an exited process's
  // total for 60 polls.
  static constexpr uint64_t kKeepUs = 10ull * 60 * 1'000'000;

  void add(ProcessOwner owner);  // owner.until_us: its exit
  // The records still kept at `now_us`, oldest exit first.
  std::vector<ProcessOwner> recent(uint64_t now_us);
  uint64_t evicted() const;

 private:
  void expire_locked(uint64_t now_us);
  mutable std::mutex mu_;  // the event loop adds, snapshots read
  std::deque<ProcessOwner> records_;
  uint64_t evicted_ = 0;
};

}  // namespace gpuledger::attribution
