#pragma once
// The rate is the rate: a GPU slot's cost over any span of windows is its
// price x the hours, to the micro-unit, whatever window_seconds is.
//
// One window's exact cost, price x seconds / 3600, is rarely a whole number
// of micro-units; rounding each window on its own (window_cost_micros) made a
// 2.00/h GPU cost 2.00016 an hour over 5 s windows. Here each slot carries the
// part of a micro-unit its windows' rounding left over into its next window,
// so the costs of consecutive windows add up to the exact cost of their span,
// rounded once (half up). The carry is kept in the store's meta table (key
// 'rate_remainder', written in the windows' own transaction), so a restart
// or a roll-up keeps it; a store from before it starts with none and keeps
// its history as it was billed.
#include <cstdint>
#include <map>
#include <string>

#include "ledger/prices.h"

namespace gpuledger::ledger {

inline constexpr const char* kRateRemainderKey = "rate_remainder";

class RateRemainders {
 public:
  // From the meta value (encode()); anything unreadable: no carry.
  static RateRemainders decode(const std::string& text);
  std::string encode() const;
  // The cost of the slot's next `window_seconds`, the carry moved on.
  int64_t window_cost(const std::string& uuid, const SlotPrice& price, int64_t window_seconds);

 private:
  struct Carry {
    __int128 remainder = 0;    // of a micro-unit, in 1/denominator parts
    __int128 denominator = 1;  // the slot's price denominator x 3600 when it was left
  };
  std::map<std::string, Carry> by_slot_;
};

}  // namespace gpuledger::ledger
