#pragma once
// Whose NVML's samples of a pid are: every pid NVML reports is resolved to
// the workload it belonged to when it ran, not only to the processes alive at
// an observation (docs/ledger.md "Processes NVML sees"):
//   1. a process in a workload view of the snapshot (alive, probed);
//   2. else a record of AttributionSnapshot::other_processes whose lifetime
//      holds the pid's newest sample: a CUDA process that exited since (its
//      exit event), or a live GPU user the probes never saw (/proc cgroup).
//      A pid reused after its record's exit has samples past it: the record
//      is not used for them (kSlackUs allows for the clocks' rounding).
// A pid none of these names is nobody's: the ledger bills its time to
// __unattributed__ (ledger/process_sm_meter.h), never to another tenant.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "attribution/snapshot.h"

namespace gpuledger::node {

class ProcessOwners {
 public:
  // /proc's start times are whole seconds after boot's whole second.
  static constexpr unsigned long long kSlackUs = 2'000'000;

  explicit ProcessOwners(const attribution::AttributionSnapshot& snapshot);
  struct Owner {
    std::string account;
    bool infrastructure = false;
  };
  // last_sample_us: the pid's newest NVML sample (0: unknown, any record fits).
  std::optional<Owner> of(uint32_t pid, unsigned long long last_sample_us) const;

 private:
  std::map<uint32_t, const attribution::WorkloadView*> live_;
  std::multimap<uint32_t, const attribution::ProcessOwner*> others_;
};

}  // namespace gpuledger::node
