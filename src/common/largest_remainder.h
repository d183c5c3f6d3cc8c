#pragma once
// Largest remainder: a whole cut into integer parts, each part floored, then
// the units the floors left out handed one at a time to the parts that lost
// the most to their floor. The one rule behind the window split
// (ledger/window_split.cpp), the launches spread over a workload's streams
// (ledger/counter_deltas.cpp) and the shown cents (report/shown_money.cpp), so
// that their ties break alike: equal remainders go to the earlier part (the
// callers order their parts by key).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace gpuledger {

// Hands `left` units over `units` (the floored parts): one each, in the order
// of `remainders` (what each part lost to its floor), largest first and equal
// ones by position, round after round until none is left. A part whose
// remainder is below 0 never gets a unit (the callers' mark of a weight of 0).
// A negative `left` (a part that was not floored, or floating error) takes
// units back in the reverse order; with `keep_non_negative`, never below 0.
// Stops when a round can hand out or take back nothing.
template <class Unit, class Remainder>
void settle_remainders(std::vector<Unit>& units, const std::vector<Remainder>& remainders, int64_t left,
                       bool keep_non_negative) {
  std::vector<size_t> order(units.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return remainders[a] > remainders[b]; });
  while (left > 0) {
    bool gave = false;
    for (size_t i : order) {
      if (left == 0) break;
      if (remainders[i] < Remainder{}) continue;
      ++units[i];
      --left;
      gave = true;
    }
    if (!gave) return;
  }
  while (left < 0) {
    bool took = false;
    for (auto it = order.rbegin(); it != order.rend() && left < 0; ++it) {
      if (keep_non_negative && !(units[*it] > Unit{})) continue;
      --units[*it];
      ++left;
      took = true;
    }
    if (!took) return;
  }
}

// `total` cut in proportion to `weights`, exactly (128-bit products): each
// part is total * weight / sum floored, plus a remainder unit. Sums to total;
// a weight of 0 gets 0. All weights 0 (or none): every part 0.
std::vector<uint64_t> apportion(uint64_t total, const std::vector<uint64_t>& weights);

}  // namespace gpuledger
