#pragma once
// The demo's bill of shared GPUs: one GPU (or MIG slice) per way of sharing
// one - time-slicing, MPS, MIG, a fractional (HAMi) allocation - each billed
// under every cost policy, with allocated against used. The allocations are
// HAND-MADE (kubernetes::GpuAllocation with share and mode, the fields the
// Kubernetes plane fills in production) and the activity is SCRIPTED; the
// arithmetic is the ledger's own (holders_from, account_window, the report).
#include <cstdint>
#include <string>

namespace gpuledger::cli {

// The bill as text; `price_per_hour` in micro-units per GPU-hour, one window of
// 60 s from `start` (the demo's own clock, so the bill is dated when it ran).
std::string shared_gpu_bill(int64_t price_per_hour, const std::string& currency, int64_t start);

}  // namespace gpuledger::cli
