#include "report/bill.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "common/utf8.h"
#include "ledger/bill_inputs.h"
#include "report/bill_audit.h"
#include "report/focus_export.h"
#include "report/memory_size_note.h"
#include "report/period_reads.h"
#include "report/probe_set_note.h"

namespace gpuledger::report {

namespace {

struct Scan {
  Report whole;
  std::vector<Report> periods;  // CSV only
  std::string focus;            // FOCUS only
};

// A range without windows has no currency of its own: it is the price list's
// then (the latest in effect), not the builder's default.
void adopt_price_list_currency(Report& r, const ledger::BillInputs& inputs) {
  if (inputs.price_lists.empty()) return;
  const auto book = nlohmann::json::parse(inputs.price_lists.back().json, nullptr, false);
  if (!book.is_object() || !book.contains("currency") || !book["currency"].is_string()) return;
  r.currency = book["currency"].get<std::string>();
  if (r.rightsizing) r.rightsizing->currency = r.currency;
}

// Recommendations: the table, JSON and HTML show them; CSV and FOCUS do not.
Scan scan(const BillSource& source, const BillRequest& q, bool recommendations) {
  ReportBuilder whole(q.from, q.to, q.by, recommendations ? std::optional(q.rightsizing) : std::nullopt);
  BillHasher hasher;
  std::unique_ptr<FocusBuilder> focus;
  if (q.format == Format::kFocus) focus = std::make_unique<FocusBuilder>(q.from, q.to, q.granularity);
  PeriodBuilders periods(q);
  if (source.windows_digest) hasher.windows_named_by_source();
  bool any_window = false;
  source.for_each_window([&](ledger::WindowRecord&& w) {
    any_window = true;
    whole.add(w);
    hasher.add(w);
    if (focus) focus->add(w);
    if (q.format == Format::kCsv) periods.add(w);
  });
  if (source.windows_digest) hasher.use_windows_digest(source.windows_digest());
  if (source.chart_costs)
    if (const auto costs = source.chart_costs()) whole.use_chart_costs(*costs);
  Scan s;
  s.whole = whole.finish();
  s.whole.source = source.report_source;
  add_memory_size_note(s.whole, source.memory_size_unknown);
  add_probe_set_note(s.whole, source.hot_path_not_probed);
  s.whole.generated_at = q.generated_at;
  add_time_coverage(s.whole, source.first_window_start, q.generated_at);
  const ledger::BillInputs inputs = source.inputs ? source.inputs() : ledger::BillInputs{};
  fill_audit(s.whole, hasher, inputs, q.generated_at);
  if (!any_window) adopt_price_list_currency(s.whole, inputs);
  s.periods = periods.finish();
  if (focus) s.focus = focus->finish(s.whole.audit, q.generated_at);
  return s;
}

// The whole bill alone: the first pass of an export whose rows are read apart
// (BillSource::for_each_window_in); its audit names every row.
Report whole_bill_first(const BillSource& source, const BillRequest& q, Report* whole) {
  BillRequest table = q;
  table.format = Format::kTable;
  Report bill = scan(source, table, false).whole;
  if (whole) *whole = bill;
  return bill;
}

// for_each_window_in(from, to) on a thread of its own, its windows kept: a
// FOCUS export's next read runs while this one's rows are written. Each
// day's read of a 1,000-node month waits 0.1-0.3 s for PostgreSQL's first
// page (a join sorted by GPU), and writing a day's 24,000 rows (28 MB) takes
// the client as long: one after the other, the machine was ~40 % idle
// (docs/performance.md, "Huge pages"). One read at a time still: the future
// is taken, or its destructor waits for it, before the next is started.
std::future<std::vector<ledger::WindowRecord>> read_ahead(const BillSource& source, int64_t from, int64_t to) {
  return std::async(std::launch::async, [&source, from, to] {
    std::vector<ledger::WindowRecord> windows;
    source.for_each_window_in(from, to, [&](ledger::WindowRecord&& w) { windows.push_back(std::move(w)); });
    return windows;
  });
}

}  // namespace

BillSource store_bill_source(const ledger::Store& store, int64_t from, int64_t to) {
  BillSource s;
  s.for_each_window = [&store, from, to](const std::function<void(ledger::WindowRecord&&)>& fn) {
    store.for_each_window(from, to, fn);
  };
  s.first_window_start = store.first_window_start();
  s.inputs = [&store, from, to] { return ledger::read_bill_inputs(store, from, to); };
  s.memory_size_unknown = store.memory_size_unknown(from, to);
  s.hot_path_not_probed = store.hot_path_not_probed(from, to);
  return s;
}

Report build_bill(const BillSource& source, const BillRequest& q) {
  BillRequest table = q;
  table.format = Format::kTable;  // no periods, no FOCUS rows
  return scan(source, table, true).whole;
}

Report build_bill(const ledger::Store& store, const BillRequest& q) {
  return build_bill(store_bill_source(store, q.from, q.to), q);
}

std::string render_bill(const ledger::Store& store, const BillRequest& q, Report* whole) {
  return render_bill(store_bill_source(store, q.from, q.to), q, whole);
}

std::string render_bill(const BillSource& source, const BillRequest& q, Report* whole) {
  std::string text;
  write_bill(source, q, whole, [&text](std::string_view piece) { text += piece; });
  return text;
}

void write_bill(const BillSource& source, const BillRequest& q, Report* whole,
                const std::function<void(std::string_view)>& sink) {
  if (q.format == Format::kFocus && source.for_each_window_in) {
    const Report bill = whole_bill_first(source, q, whole);
    FocusBuilder::write_header(sink);
    FocusBuilder focus(q.from, q.to, q.granularity);
    // Whole periods at a time, as FocusBuilder::finish orders them. A read
    // of few rows doubles the periods of the next: one read per period was
    // most of an hourly export of one node (720 reads of a few queries each:
    // 1.8 s of 2.1 s). The rows in memory stay under about kFocusRowsHeld,
    // and the windows of one read more: the next read runs while these rows
    // are written (read_ahead).
    int64_t periods = 1;
    auto read_from = [&](int64_t p) {
      int64_t end = p;
      for (int64_t i = 0; i < periods && end < q.to; ++i) end = period_end(end, q.granularity);
      return std::pair{end, read_ahead(source, std::max(p, q.from), std::min(end, q.to))};
    };
    if (q.from >= q.to) return;
    auto [end, read] = read_from(period_start(q.from, q.granularity));
    while (read.valid()) {
      for (const auto& w : read.get()) focus.add(w);
      const size_t held = focus.held();
      if (held * 2 <= kFocusRowsHeld) periods *= 2;
      else if (held > kFocusRowsHeld && periods > 1) periods /= 2;
      if (end < q.to) std::tie(end, read) = read_from(end);
      focus.flush(bill.audit, q.generated_at, sink);
    }
    return;
  }
  if (q.format == Format::kCsv && source.for_each_window_in && !q.csv_totals) {
    // The rows are the charge periods' (read at that period); of the whole
    // bill CSV shows its audit, currency and notes only, the same from the
    // coarsest roll-ups the source has: each window is billed once, not
    // twice (a 1,000-node month by day: 240,000 day roll-ups added to two
    // builders each). A totals row shows the whole bill's sums: read whole.
    Report bill;
    PeriodBuilders periods(q);
    read_periods(source, q, periods, [&] { bill = whole_bill_first(source, q, whole); });
    sink(valid_utf8(render_csv_periods(bill, periods.finish(), q.csv_totals)));
    return;
  }
  Scan s = scan(source, q, q.format != Format::kCsv && q.format != Format::kFocus);
  if (whole) *whole = s.whole;
  switch (q.format) {
    case Format::kFocus: sink(s.focus); return;
    case Format::kCsv: sink(valid_utf8(render_csv_periods(s.whole, s.periods, q.csv_totals))); return;
    default: sink(render(s.whole, q.format, RenderOptions{q.csv_totals, q.wide}));
  }
}

}  // namespace gpuledger::report
