#include "kubernetes/allocation_outage.h"

#include "kubernetes/pod_resources_client.h"

namespace gpuledger::kubernetes {

std::string_view to_string(BillingAllocation::Basis basis) {
  switch (basis) {
    case BillingAllocation::Basis::kAnswer: return "kubelet";
    case BillingAllocation::Basis::kLastAnswer: return "last_answer";
    case BillingAllocation::Basis::kUnknown: return "unknown";
  }
  return "unknown";
}

BillingAllocation billing_allocation(const PodResourcesState& state, std::chrono::steady_clock::time_point now,
                                     std::chrono::seconds keep) {
  BillingAllocation out;
  if (state.up) {
    out.allocations = state.allocations;
    return out;
  }
  if (!state.last_answer_at) {
    out.basis = BillingAllocation::Basis::kUnknown;
    return out;
  }
  out.last_answer_age = std::chrono::duration_cast<std::chrono::seconds>(now - *state.last_answer_at);
  if (now - *state.last_answer_at <= keep) {
    out.basis = BillingAllocation::Basis::kLastAnswer;
    out.allocations = state.last_answer;
  } else {
    out.basis = BillingAllocation::Basis::kUnknown;
  }
  return out;
}

}  // namespace gpuledger::kubernetes
