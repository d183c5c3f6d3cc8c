#pragma once
// The memory share of one slot's window (WindowInput::memory_price_share),
// from the price book: either memory_price_share as configured, or derived
// from a price per GiB-hour of VRAM (PriceBook::vram_micros_per_gib_hour):
//
//   m = min(1, vram_per_gib_hour x capacity_GiB / P)
//
// P: the slot's price per hour (price_for: a MIG instance's own or scaled
// price); capacity_GiB: the slot's memory (used + free from DCGM/NVML, bytes /
// 2^30). So a slot held whole for an hour bills vram_per_gib_hour x capacity
// as memory, and a partial holder pays vram_per_gib_hour x the GiB-hours it
// held (up to the micro-unit rounding of window_split.h); the rest of the
// window, C - M, goes through the cost policy.
//  * m would exceed 1 (the memory price is above the GPU's price): capped at 1
//    (kCapped; the accountant logs it once per GPU model).
//  * capacity unknown (no memory reading in the window: a GPU neither DCGM
//    nor NVML reads, a backfill window written for time the agent was down),
//    or not a finite positive number: m = 0, never a guessed capacity
//    (kCapacityUnknown; the accountant logs it once per slot).
//  * MIG slots (a MIG instance, or the free slices of a MIG-enabled GPU,
//    GpuSlot::mig_profile set): kCapacityUnknown whatever the reading. The
//    device plane reads memory per physical GPU only (NVML's per-MIG handles
//    are not read; dcgm-exporter's per-instance series carry the parent's
//    UUID and GPU_I_ID, not the MIG device UUID the allocation names), and a
//    whole GPU's memory is not a slice's.
//  * P = 0 (the slot has no price): m = 0, nothing to split (kUnpriced).
// Pure; conservation is window_split.h's: busy + idle + memory = C, exactly.
#include <optional>

#include "ledger/prices.h"

namespace gpuledger::ledger {

enum class MemoryShareBasis {
  kConfigured,       // memory_price_share as configured (no vram_per_gib_hour)
  kDerived,          // from vram_per_gib_hour and the capacity
  kCapped,           // derived, above 1: capped at 1
  kCapacityUnknown,  // vram_per_gib_hour set, the slot's memory unknown: 0
  kUnpriced,         // vram_per_gib_hour set, the slot's price 0: 0
};

struct MemoryShare {
  double share = 0;  // [0,1]
  MemoryShareBasis basis = MemoryShareBasis::kConfigured;
};

// `price`: price_for(book, slot); `capacity_bytes`: the slot's memory reading.
MemoryShare memory_share_for(const PriceBook& book, const GpuSlot& slot, const SlotPrice& price,
                             std::optional<double> capacity_bytes);

}  // namespace gpuledger::ledger
