#include "report/fleet_counter.h"

namespace gpuledger::report {

CounterIncrease counter_increase(const CounterSummary& s, double from, const LedgerSince& since) {
  CounterIncrease out;
  const bool ledger_began_in_range = since.earliest && *since.earliest >= from;
  double start = 0;
  if (s.baseline) {
    start = *s.baseline;
  } else if (!ledger_began_in_range) {
    out.history_unseen = true;
    start = s.resets == 0 || s.samples.empty() ? s.first : s.samples.front().second;
  }
  if (s.resets == 0 || s.samples.empty()) {
    out.increase = s.last > start ? s.last - start : 0;
    return out;
  }
  const bool ledger_started_anew = since.latest && *since.latest >= from;
  double prev = start;
  for (const auto& [t, v] : s.samples) {
    if (v >= prev) {
      out.increase += v - prev;
    } else if (ledger_started_anew) {
      out.increase += v;
    } else {
      out.reset_unknown = true;
    }
    prev = v;
  }
  return out;
}

}  // namespace gpuledger::report
