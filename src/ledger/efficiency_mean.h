#pragma once
// Weighted means that skip what was not measured: "unknown" stays unknown,
// and never drags a mean to 0. KnownMean is one value's (the hourly roll-up's
// kKnownMean fields, window_fields.h); EfficiencyMean the four efficiency
// ratios', where a report averages a group's windows (weight: window length x
// GPU fraction, i.e. held time).
#include <array>
#include <optional>

#include "ledger/store.h"

namespace gpuledger::ledger {

class KnownMean {
 public:
  void add(const std::optional<double>& v, double weight) {
    if (!v || weight <= 0) return;
    num_ += *v * weight;
    den_ += weight;
  }
  std::optional<double> mean() const { return den_ > 0 ? std::optional<double>(num_ / den_) : std::nullopt; }

 private:
  double num_ = 0, den_ = 0;
};

class EfficiencyMean {
 public:
  void add(const Efficiency& e, double weight) {
    ratio_[0].add(e.sm_active, weight);
    ratio_[1].add(e.sm_occupancy, weight);
    ratio_[2].add(e.tensor_active, weight);
    ratio_[3].add(e.dram_active, weight);
  }
  Efficiency mean() const { return {ratio_[0].mean(), ratio_[1].mean(), ratio_[2].mean(), ratio_[3].mean()}; }

 private:
  std::array<KnownMean, 4> ratio_;
};

}  // namespace gpuledger::ledger
