#pragma once
// How much one Prometheus counter series of a node's ledger grew over a
// report's [from, to), exactly (no extrapolation, unlike increase()):
//
//  * The start value is the series' value at --from (Prometheus' last sample
//    at or before it, within its lookback). Without one: when the node's
//    ledger began at or after --from (gpuledger_ledger_first_window_timestamp_seconds),
//    the start is 0 - everything it counted is in range; otherwise the
//    counter's first sample in range is the start and the span before it is
//    reported as not covered: the agent's counters start from its ledger's
//    totals, so that first value holds history from before --from, which a
//    bill must never include.
//  * The end is the last sample in range, so a node drained or deleted
//    before --to still pays for what it counted until it went.
//  * A counter that went down: when the node's ledger was started anew in
//    the range, the new value is all new (counted); otherwise the ledger lost
//    old windows (retention) across an agent restart, and what the node
//    counted between those two samples is unknown (not counted, flagged).
#include <optional>
#include <utility>
#include <vector>

namespace gpuledger::report {

struct CounterSummary {
  std::optional<double> baseline;  // the value at --from
  double first = 0, last = 0;      // the first (valid without resets) and last samples in range
  int resets = 0;                  // decreases in range
  std::vector<std::pair<double, double>> samples;  // (time, value) in range; fetched only when resets > 0
};

struct LedgerSince {
  std::optional<double> earliest, latest;  // gpuledger_ledger_first_window_timestamp_seconds over the range
};

struct CounterIncrease {
  double increase = 0;
  bool history_unseen = false;  // no value at --from and the ledger is older: the span before the first sample
  bool reset_unknown = false;   // a decrease across which the growth is unknown
};

CounterIncrease counter_increase(const CounterSummary& series, double from, const LedgerSince& since);

}  // namespace gpuledger::report
