#pragma once
// A weighted mean of the four efficiency ratios, each over only the samples
// that had a value: "unknown" stays unknown, and never drags a mean to 0.
// Used where windows are merged (hourly roll-up) and where a report averages
// a group's windows (weight: window length x GPU fraction, i.e. held time).
#include "ledger/store.h"

namespace gpuledger::ledger {

class EfficiencyMean {
 public:
  void add(const Efficiency& e, double weight) {
    add_one(0, e.sm_active, weight);
    add_one(1, e.sm_occupancy, weight);
    add_one(2, e.tensor_active, weight);
    add_one(3, e.dram_active, weight);
  }
  Efficiency mean() const { return {value(0), value(1), value(2), value(3)}; }

 private:
  void add_one(int i, const std::optional<double>& v, double weight) {
    if (!v || weight <= 0) return;
    num_[i] += *v * weight;
    den_[i] += weight;
  }
  std::optional<double> value(int i) const {
    return den_[i] > 0 ? std::optional<double>(num_[i] / den_[i]) : std::nullopt;
  }
  double num_[4] = {0, 0, 0, 0}, den_[4] = {0, 0, 0, 0};
};

}  // namespace gpuledger::ledger
