#pragma once
// Which accounts' ledger series (gpuledger_cost_total and its siblings, keyed
// by the exported labels) leave /metrics: those of an account neither live,
// nor holding a GPU, nor charged for --retire-after. Without it the series
// grow with pod churn for the life of the agent. The totals stay in the store
// (reports); a retired account that comes back starts its counters from 0,
// which Prometheus' increase()/rate() read as a counter reset.
// The special accounts (__idle__, __unallocated__) never retire.
#include <array>
#include <map>
#include <string>
#include <vector>

#include "ledger/store.h"

namespace gpuledger::ledger {

class SeriesRetirement {
 public:
  // after_seconds <= 0: never retire (the default).
  void set_after(double after_seconds) { after_ = after_seconds; }
  double after() const { return after_; }
  // The account with these exported labels is live, holds a GPU or was
  // charged at `time` (Unix seconds).
  void seen(const AccountLabels& labels, double time);
  // The labels unseen since now - after; forgotten once returned.
  std::vector<AccountLabels> due(double now);

 private:
  using Key = std::array<std::string, 4>;
  double after_ = 0;
  std::map<Key, double> last_seen_;
};

}  // namespace gpuledger::ledger
