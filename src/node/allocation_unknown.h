#pragma once
// A window whose GPU allocation could not be read (kubernetes/allocation_outage.h:
// the kubelet never answered, or its last answer is too old to stand for it):
// each slot is held, whole, by __allocation_unknown__, so the bill says that
// who held the GPU is not known. Its idle time is then never billed to
// __unallocated__ ("nobody held it") nor its users billed as if they held it;
// busy time still goes to the workloads seen running on it.
#include "kubernetes/allocation_outage.h"
#include "ledger/accountant.h"
#include "node/observation_inputs.h"

namespace gpuledger::node {

// Every slot held, whole, by __allocation_unknown__ (any source that is down).
void hold_by_allocation_unknown(ledger::Observation& observation);

// make_observation (agent_inputs.h) with the allocation the kubelet's state
// leaves to bill by: its answer, its last answer, or unknown.
ledger::Observation make_billed_observation(double now, const attribution::AttributionSnapshot& snapshot,
                                    const device::DeviceSnapshot& devices,
                                    const kubernetes::BillingAllocation& allocation, const ledger::PriceBook& prices);

}  // namespace gpuledger::node
