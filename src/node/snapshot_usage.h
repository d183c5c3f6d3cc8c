#pragma once
// From the agent's snapshot to the accountant's input: one WorkloadUsage per
// workload, with its names as labels, cumulative busy-seconds estimate
// (busy_seconds_estimate), launches and live bytes, and - where the snapshot
// has per-GPU usage with a known UUID - the same per slot.
#include <vector>

#include "attribution/snapshot.h"
#include "ledger/accountant.h"

namespace gpuledger::node {

std::vector<ledger::WorkloadUsage> workload_usages(const attribution::AttributionSnapshot& snapshot);

}  // namespace gpuledger::node
