#include "ledger/energy_split.h"

#include "common/error.h"

namespace gpuledger::ledger {

EnergySplit split_window_energy(const WindowInput& window, const WindowEnergy& energy) {
  if (energy.millijoules < 0) throw Error("split_window_energy: negative energy");
  // The cost arithmetic is unit-free integer apportioning: reuse it with the
  // energy as the quantity, so energy and cost can never be split differently.
  WindowInput in = window;
  in.cost_micros = energy.millijoules;
  // Energy follows use, whatever the cost policy, and has no memory part.
  in.cost_policy = CostPolicy::kUsage;
  in.memory_price_share = 0;
  const WindowSplit split = split_window(in);
  EnergySplit out;
  out.source = energy.source;
  out.busy_millijoules = split.busy_micros;
  out.idle_millijoules = split.idle_micros;
  out.charges.reserve(split.charges.size());
  for (const auto& c : split.charges) out.charges.push_back({c.account, c.kind, c.micros});
  return out;
}

double millijoules_to_kwh(int64_t millijoules) { return static_cast<double>(millijoules) / 3.6e9; }

}  // namespace gpuledger::ledger
