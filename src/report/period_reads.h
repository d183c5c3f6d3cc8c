#pragma once
// A CSV's rows (one builder per charge period) read on two connections at
// once where the source has a second (BillSource::second_reader): a fleet's
// month by day is 240,000 day roll-ups, received, parsed and billed on one
// thread while the machine's other core and the server's second sat idle half
// the time (docs/performance.md, "Two connections"). A period's windows are read
// whole by one reader, in the order one read of the range gives them, so each
// period's row is the same bytes whichever reader read it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "report/bill.h"
#include "report/report.h"

namespace gpuledger::report {

// CSV's rows: a builder per charge period, each window added to its period's.
class PeriodBuilders {
 public:
  explicit PeriodBuilders(const BillRequest& q) : q_(q) {}
  void add(const ledger::WindowRecord& w);
  // Another's periods, none of them this one's (read apart: read_periods).
  void take(PeriodBuilders&& other);
  std::vector<Report> finish();

 private:
  const BillRequest& q_;
  std::map<int64_t, std::unique_ptr<ReportBuilder>> periods_;
};

// [from, to) cut at charge periods into at most `parts` spans of whole
// periods (the first and last as the range cuts them), in order.
std::vector<std::pair<int64_t, int64_t>> period_spans(int64_t from, int64_t to, Granularity g, int parts);

// Every period of q's range read into `periods` with source.for_each_window_in
// and, where the source gives one, its second reader at the same time; `first`
// (the whole bill's pass) runs on this thread before its reads. Without a
// second reader: first, then the range in one read.
void read_periods(const BillSource& source, const BillRequest& q, PeriodBuilders& periods,
                  const std::function<void()>& first);

}  // namespace gpuledger::report
