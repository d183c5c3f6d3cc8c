#pragma once
// The SM-seconds NVML's per-process samples give each account on each slot
// between two observations: deltas of the per-process totals the device plane
// keeps (device/process_sm_time.h), so no sample is counted twice or lost.
//
//  * Keyed by (slot uuid, pid). The account of a pid is the one the agent
//    names for it now, else the one it named before (a process that exited
//    keeps its last samples' owner).
//  * The first take() is the baseline: it returns nothing (what ran before
//    the ledger watched is not in its windows).
//  * A pid first seen after that counts from 0 (all of its total is new); a
//    total that went down (a reused pid) counts from 0; a pid that vanished is
//    forgotten.
//  * A pid of no account (the agent could name no workload for it, now or
//    before: node/process_owners.h) is nobody's: its SM time goes to the
//    account __unattributed__ (never spread over the named users) and adds
//    to unattributed_seconds() of its slot.
// Only slots where NVML's samples are per process belong here: not MIG
// instances (NVML gives none) and not a GPU with MPS clients (the samples are
// the server's); agent_inputs leaves those out.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gpuledger::ledger {

struct ProcessSmUse {
  std::string slot_uuid;
  uint32_t pid = 0;
  std::string account;  // workload id; empty: not a workload's process (now)
  double sm_seconds_total = 0;
  std::string gpu;  // the node's GPU index, as dcgm-exporter labels it; "" unknown
};

class ProcessSmMeter {
 public:
  // SM-seconds per (slot uuid, account) since the previous take().
  std::map<std::pair<std::string, std::string>, double> take(const std::vector<ProcessSmUse>& readings);
  struct Unattributed {
    std::string gpu;  // the GPU index label last given for the slot
    double seconds = 0;
  };
  // SM-seconds of processes of no account since the first take(), by slot uuid.
  const std::map<std::string, Unattributed>& unattributed_seconds() const { return unattributed_; }

 private:
  struct Seen {
    std::string account;
    double total = 0;
  };
  std::map<std::pair<std::string, uint32_t>, Seen> last_;
  bool baseline_taken_ = false;
  std::map<std::string, Unattributed> unattributed_;
};

}  // namespace gpuledger::ledger
