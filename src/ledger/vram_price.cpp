#include "ledger/vram_price.h"

#include <cmath>

namespace gpuledger::ledger {

MemoryShare memory_share_for(const PriceBook& book, const GpuSlot& slot, const SlotPrice& price,
                             std::optional<double> capacity_bytes) {
  if (!book.vram_micros_per_gib_hour) return {book.memory_price_share, MemoryShareBasis::kConfigured};
  const long double vram_price = static_cast<long double>(*book.vram_micros_per_gib_hour);
  // The slot's own price per hour: a scaled MIG price is the parent's x n / slices.
  const long double slot_price = static_cast<long double>(price.micros_per_hour) * price.numerator /
                                 static_cast<long double>(price.denominator);
  if (vram_price == 0) return {0, MemoryShareBasis::kDerived};  // memory is free: nothing to look up
  if (!(slot_price > 0)) return {0, MemoryShareBasis::kUnpriced};
  if (slot.mig_profile || !capacity_bytes || !std::isfinite(*capacity_bytes) || !(*capacity_bytes > 0))
    return {0, MemoryShareBasis::kCapacityUnknown};
  constexpr long double kGiB = 1024.0L * 1024.0L * 1024.0L;
  const long double m = vram_price * (static_cast<long double>(*capacity_bytes) / kGiB) / slot_price;
  if (m > 1) return {1, MemoryShareBasis::kCapped};
  return {static_cast<double>(m), MemoryShareBasis::kDerived};
}

}  // namespace gpuledger::ledger
