#include "node/allocation_unknown.h"

#include "ledger/window_split.h"

namespace gpuledger::node {

void hold_by_allocation_unknown(ledger::Observation& observation) {
  const std::string account(ledger::kAllocationUnknownAccount);
  observation.holders.clear();
  for (const auto& slot : observation.slots)
    observation.holders.push_back({slot.uuid, account, ledger::AccountLabels{"", "", "", account, "", ""}, 1.0, true});
}

ledger::Observation make_billed_observation(double now, const attribution::AttributionSnapshot& snapshot,
                                    const device::DeviceSnapshot& devices,
                                    const kubernetes::BillingAllocation& allocation, const ledger::PriceBook& prices) {
  ledger::Observation o = make_observation(now, snapshot, devices, allocation.allocations, true, prices);
  if (allocation.basis == kubernetes::BillingAllocation::Basis::kUnknown) {
    hold_by_allocation_unknown(o);
    o.device_use_known = false;  // no allocation to hold use against
  }
  return o;
}

}  // namespace gpuledger::node
