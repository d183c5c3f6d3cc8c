#include "report/bill.h"

#include <map>
#include <memory>

#include "common/utf8.h"
#include "ledger/bill_inputs.h"
#include "report/bill_audit.h"
#include "report/focus_export.h"
#include "report/memory_size_note.h"

namespace gpuledger::report {

namespace {

struct Scan {
  Report whole;
  std::vector<Report> periods;  // CSV only
  std::string focus;            // FOCUS only
};

Scan scan(const ledger::Store& store, const BillRequest& q) {
  ReportBuilder whole(q.from, q.to, q.by, q.rightsizing);
  BillHasher hasher;
  std::unique_ptr<FocusBuilder> focus;
  if (q.format == Format::kFocus) focus = std::make_unique<FocusBuilder>(q.from, q.to, q.granularity);
  std::map<int64_t, std::unique_ptr<ReportBuilder>> periods;
  store.for_each_window(q.from, q.to, [&](ledger::WindowRecord&& w) {
    whole.add(w);
    hasher.add(w);
    if (focus) focus->add(w);
    if (q.format == Format::kCsv) {
      const int64_t p = period_start(w.start, q.granularity);
      auto& b = periods[p];
      if (!b) b = std::make_unique<ReportBuilder>(std::max(p, q.from), std::min(period_end(p, q.granularity), q.to), q.by);
      b->add(w);
    }
  });
  Scan s;
  s.whole = whole.finish();
  add_memory_size_note(s.whole, store.memory_size_unknown(q.from, q.to));
  s.whole.generated_at = q.generated_at;
  add_time_coverage(s.whole, store.first_window_start(), q.generated_at);
  fill_audit(s.whole, hasher, ledger::read_bill_inputs(store, q.from, q.to), q.generated_at);
  for (auto& [start, b] : periods) s.periods.push_back(b->finish());
  if (focus) s.focus = focus->finish(s.whole.audit, q.generated_at);
  return s;
}

}  // namespace

Report build_bill(const ledger::Store& store, const BillRequest& q) {
  BillRequest table = q;
  table.format = Format::kTable;  // no periods, no FOCUS rows
  return scan(store, table).whole;
}

std::string render_bill(const ledger::Store& store, const BillRequest& q, Report* whole) {
  Scan s = scan(store, q);
  if (whole) *whole = s.whole;
  switch (q.format) {
    case Format::kFocus: return s.focus;
    case Format::kCsv: return valid_utf8(render_csv_periods(s.whole, s.periods, q.csv_totals));
    default: return render(s.whole, q.format, RenderOptions{q.csv_totals, q.wide});
  }
}

}  // namespace gpuledger::report
