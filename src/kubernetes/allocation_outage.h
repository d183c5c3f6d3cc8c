#pragma once
// Which GPU allocation bills the node's windows while the kubelet's
// pod-resources socket does not answer: a node booting (the agent up before
// the kubelet), a kubelet restart or upgrade.
//
// The kubelet alone assigns devices, and a restart changes no assignment: it
// restores them from its checkpoint, and while it is down it admits no pod. So
// for `keep` after the last answer, that answer still is the allocation: a GPU
// it gave to containers stays theirs, a GPU it gave no one stays unallocated.
// Before the first answer, and once the last one is older than `keep`
// (kubernetes.allocation_keep_seconds), the allocation is unknown: every GPU is
// held by __allocation_unknown__ (ledger::kAllocationUnknownAccount), never by
// __unallocated__, which says the kubelet was read and nobody held the GPU.
#include <chrono>
#include <string_view>
#include <vector>

#include "kubernetes/gpu_allocation.h"

namespace gpuledger::kubernetes {

struct PodResourcesState;

struct BillingAllocation {
  enum class Basis {
    kAnswer,      // the kubelet answered the last poll
    kLastAnswer,  // it does not answer now; its last answer is younger than `keep`
    kUnknown,     // it never answered, or its last answer is older than `keep`
  };
  Basis basis = Basis::kAnswer;
  std::vector<GpuAllocation> allocations;  // to bill by; empty when unknown
  std::chrono::seconds last_answer_age{0};  // kLastAnswer and kUnknown after an answer
};

// "kubelet", "last_answer", "unknown" (the basis label of gpuledger_gpu_allocation_basis).
std::string_view to_string(BillingAllocation::Basis basis);

BillingAllocation billing_allocation(const PodResourcesState& state, std::chrono::steady_clock::time_point now,
                                     std::chrono::seconds keep);

}  // namespace gpuledger::kubernetes
