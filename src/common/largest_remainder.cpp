#include "common/largest_remainder.h"

namespace gpuledger {

std::vector<uint64_t> apportion(uint64_t total, const std::vector<uint64_t>& weights) {
  unsigned __int128 sum = 0;
  for (uint64_t w : weights) sum += w;
  std::vector<uint64_t> parts(weights.size(), 0);
  if (sum == 0) return parts;
  std::vector<unsigned __int128> remainders(weights.size());
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const unsigned __int128 exact = static_cast<unsigned __int128>(total) * weights[i];
    parts[i] = static_cast<uint64_t>(exact / sum);
    remainders[i] = exact % sum;
    given += parts[i];
  }
  // The floors leave out fewer units than there are parts: one round.
  settle_remainders(parts, remainders, static_cast<int64_t>(total - given), true);
  return parts;
}

}  // namespace gpuledger
