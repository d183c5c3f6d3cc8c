#include "report/period_reads.h"

#include <algorithm>
#include <atomic>
#include <future>

namespace gpuledger::report {

void PeriodBuilders::add(const ledger::WindowRecord& w) {
  const int64_t p = period_start(w.start, q_.granularity);
  auto& b = periods_[p];
  if (!b)
    b = std::make_unique<ReportBuilder>(std::max(p, q_.from), std::min(period_end(p, q_.granularity), q_.to), q_.by,
                                        std::nullopt);
  b->add(w);
}

void PeriodBuilders::take(PeriodBuilders&& other) {
  periods_.merge(other.periods_);
}

std::vector<Report> PeriodBuilders::finish() {
  std::vector<Report> out;
  for (auto& [start, b] : periods_) out.push_back(b->finish());
  return out;
}

std::vector<std::pair<int64_t, int64_t>> period_spans(int64_t from, int64_t to, Granularity g, int parts) {
  std::vector<int64_t> ends;  // each period's end, the last cut at `to`
  for (int64_t p = period_start(from, g); p < to; p = period_end(p, g)) ends.push_back(std::min(period_end(p, g), to));
  std::vector<std::pair<int64_t, int64_t>> out;
  const size_t n = ends.size(), k = std::min(static_cast<size_t>(std::max(parts, 1)), n);
  int64_t start = from;
  for (size_t i = 0; i < k && start < to; ++i) {
    const int64_t end = ends[(i + 1) * n / k - 1];  // the parts' periods differ in number by one at most
    out.emplace_back(start, end);
    start = end;
  }
  return out;
}

namespace {

// Spans, not halves: the thread that also reads the whole bill first takes
// fewer of them. More spans balance better and cost a statement each.
constexpr int kSpans = 4;

}  // namespace

void read_periods(const BillSource& source, const BillRequest& q, PeriodBuilders& periods,
                  const std::function<void()>& first) {
  const auto spans = period_spans(q.from, q.to, q.granularity, kSpans);
  // Asked for on this thread (it joins the snapshot the first reader holds,
  // idle now); destroyed on it too, after its last read.
  const BillSource::WindowsIn second = spans.size() > 1 && source.second_reader ? source.second_reader() : nullptr;
  if (!second) {
    first();
    source.for_each_window_in(q.from, q.to, [&](ledger::WindowRecord&& w) { periods.add(w); });
    return;
  }
  std::atomic<size_t> next{0};
  // The spans nobody has taken yet, read by `reader` into `into`.
  auto drain = [&](const BillSource::WindowsIn& reader, PeriodBuilders& into) {
    for (size_t i; (i = next.fetch_add(1)) < spans.size();)
      reader(spans[i].first, spans[i].second, [&](ledger::WindowRecord&& w) { into.add(w); });
  };
  PeriodBuilders theirs(q);
  auto other = std::async(std::launch::async, [&] { drain(second, theirs); });
  try {
    first();
    drain(source.for_each_window_in, periods);
  } catch (...) {
    next.store(spans.size());  // the other thread stops after its read; the future's end waits for it
    throw;
  }
  other.get();  // its error, if any, is the report's
  periods.take(std::move(theirs));
}

}  // namespace gpuledger::report
