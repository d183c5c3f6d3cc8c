#pragma once
// From the agent's snapshot to the accountant's input: one WorkloadUsage per
// workload, with its names as labels, cumulative busy-seconds estimate
// (busy_seconds_estimate), launches and live bytes, and - where the snapshot
// has per-GPU usage with a known UUID - the same per slot.
#include <vector>

#include "attribution/snapshot.h"
#include "identity/workload_names.h"
#include "ledger/accountant.h"

namespace gpuledger::node {

// A workload's names as the ledger's labels (all of them: the Slurm user and account too).
ledger::AccountLabels account_labels(const identity::WorkloadNames& names);

std::vector<ledger::WorkloadUsage> workload_usages(const attribution::AttributionSnapshot& snapshot);

}  // namespace gpuledger::node
