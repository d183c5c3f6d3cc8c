#include "ledger/rate_remainder.h"

#include <nlohmann/json.hpp>

namespace gpuledger::ledger {

namespace {
// The bounds a stored carry must keep to be taken: a denominator a price can
// have (denominator x 3600, slices at most 8) and a remainder below it.
constexpr int64_t kMaxDenominator = int64_t{1} << 40;
}  // namespace

RateRemainders RateRemainders::decode(const std::string& text) {
  RateRemainders out;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [uuid, v] : j.items()) {
    if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer()) continue;
    const int64_t r = v[0].get<int64_t>(), d = v[1].get<int64_t>();
    if (d <= 0 || d > kMaxDenominator || r < 0 || r >= d) continue;
    out.by_slot_[uuid] = {r, d};
  }
  return out;
}

std::string RateRemainders::encode() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [uuid, c] : by_slot_)
    j[uuid] = {static_cast<int64_t>(c.remainder), static_cast<int64_t>(c.denominator)};
  return j.dump();
}

int64_t RateRemainders::window_cost(const std::string& uuid, const SlotPrice& price, int64_t window_seconds) {
  if (window_seconds <= 0) return 0;
  const __int128 num = static_cast<__int128>(price.micros_per_hour) * price.numerator * window_seconds;
  const __int128 den = static_cast<__int128>(price.denominator) * 3600;
  auto [it, fresh] = by_slot_.try_emplace(uuid, Carry{den / 2, den});  // half up, as one rounding of the whole span
  Carry& c = it->second;
  if (c.denominator != den) {  // another price shape (a MIG profile's slices): the same part of a micro-unit
    c.remainder = c.remainder * den / c.denominator;
    c.denominator = den;
  }
  const __int128 total = c.remainder + num;
  c.remainder = total % den;
  return static_cast<int64_t>(total / den);
}

}  // namespace gpuledger::ledger
