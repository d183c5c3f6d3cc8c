#include "ledger/allocation_unknown.h"

#include "ledger/window_split.h"

namespace gpuledger::ledger {

namespace {

// Every slot held, whole, by __allocation_unknown__.
void hold_by_allocation_unknown(Observation& observation) {
  const std::string account(kAllocationUnknownAccount);
  observation.holders.clear();
  for (const auto& slot : observation.slots)
    observation.holders.push_back({slot.uuid, account, AccountLabels{"", "", "", account}, 1.0, true});
}

}  // namespace

Observation make_billed_observation(double now, const agent::AgentSnapshot& snapshot,
                                    const device::DeviceSnapshot& devices,
                                    const kubernetes::BillingAllocation& allocation, const PriceBook& prices) {
  Observation o = make_observation(now, snapshot, devices, allocation.allocations, true, prices);
  if (allocation.basis == kubernetes::BillingAllocation::Basis::kUnknown) hold_by_allocation_unknown(o);
  return o;
}

}  // namespace gpuledger::ledger
