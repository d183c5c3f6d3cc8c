#include "fleet/fleet_sql.h"

#include <algorithm>
#include <climits>
#include <set>
#include <string>
#include <utility>

#include "fleet/body_bounds.h"
#include "fleet/pg_connection.h"
#include "report/report_text.h"

namespace gpuledger::fleet {

std::string filter_sql(PgConnection& db, const FleetFilter& filter, const std::string& table) {
  std::string sql;
  if (filter.cluster) sql += " AND " + table + ".cluster = " + db.literal(*filter.cluster);
  if (filter.node) sql += " AND " + table + ".node = " + db.literal(*filter.node);
  return sql;
}

void begin_snapshot(PgConnection& db, const std::string& shared) {
  db.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  // Before any query of the transaction, as PostgreSQL requires.
  if (!shared.empty()) db.exec("SET TRANSACTION SNAPSHOT " + db.literal(shared));
  // Each totals row finds its roll-up once: PostgreSQL 14's memoize cache
  // before that index probe never hits here, and at 80,000 GPU-months it
  // cost 131 MB and most of the server's time (docs/performance.md, section
  // 6). Where the setting exists (14 and later), for this transaction. And
  // no JIT: a report's statements are costed past jit_above_cost by their
  // rows, compiled (tens of milliseconds each) to save nothing on rows that
  // are read once; a month to date 3.87-4.01 s with it, 3.63 s without
  // (docs/performance.md, "Whole hours a GPU at a time").
  db.exec("SELECT set_config(name, 'off', true) FROM pg_settings WHERE name IN ('enable_memoize', 'jit')");
}

void in_snapshot(PgConnection& db, const std::function<void()>& fn) {
  if (db.in_transaction()) return fn();
  begin_snapshot(db);
  try {
    fn();
    db.exec("COMMIT");
  } catch (...) {
    if (db.ok()) db.exec("ROLLBACK");
    throw;
  }
}

std::string array_literal(PgConnection& db, const std::vector<std::string>& items) {
  std::string text = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) text += ',';
    append_array_element(text, items[i]);
  }
  return db.literal(text + "}");
}

// Written through a pointer into room for the worst case (every byte
// escaped), then cut to size: a shipper's batch puts each window's JSON body
// here, a quote every few bytes, and a byte at a time (a capacity check each,
// the string regrown as it went) it was ~15 % of a shipper's CPU
// (docs/performance.md, "Schema 12").
void append_array_element(std::string& text, std::string_view item) {
  const size_t at = text.size();
  text.resize(at + 2 * item.size() + 2);
  char* out = text.data() + at;
  *out++ = '"';
  for (const char ch : item) {
    if (ch == '"' || ch == '\\') *out++ = '\\';
    *out++ = ch;
  }
  *out++ = '"';
  text.resize(static_cast<size_t>(out - text.data()));
}

namespace {
// The first and last of `starts`, the bounds of their range conditions.
std::pair<int64_t, int64_t> start_bounds(const std::vector<std::string>& starts) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& start : starts) {
    lo = std::min<int64_t>(lo, std::stoll(start));
    hi = std::max<int64_t>(hi, std::stoll(start));
  }
  return {lo, hi};
}
}  // namespace

// The bounds of the starts too: the index (period, period_start) is then read for
// those periods only, where a list alone had PostgreSQL read every hour of the
// month through the primary key (docs/performance.md, section 6: a month to date).
std::string whole_periods(PgConnection& db, Period p, const std::vector<std::string>& starts, const FleetFilter& filter,
                          const std::string& alias) {
  const auto [lo, hi] = start_bounds(starts);
  const std::string a = alias + ".";
  return a + "period = " + db.literal(report::to_string(p)) + " AND " + a + "period_start = ANY(" +
         array_literal(db, starts) + "::bigint[]) AND " + a + "period_start >= " + std::to_string(lo) + " AND " + a +
         "period_start <= " + std::to_string(hi) + filter_sql(db, filter, alias);
}

std::string joined_periods(PgConnection& db, const std::string& alias, Period p,
                           const std::vector<std::string>& starts) {
  const auto [lo, hi] = start_bounds(starts);
  return " AND " + alias + ".period = " + db.literal(report::to_string(p)) + " AND " + alias +
         ".period_start >= " + std::to_string(lo) + " AND " + alias + ".period_start <= " + std::to_string(hi);
}

std::string join_while_current(const std::string& table, const std::string& alias, bool by_period) {
  std::string on = by_period ? alias + ".period = t.period" : "";
  for (const char* column : {"cluster", "node", "gpu_uuid", "period_start", "windows", "cost_micros", "digests"})
    on += (on.empty() ? "" : " AND ") + alias + "." + column + " = t." + column;
  return " LEFT JOIN gpuledger." + table + " " + alias + " ON " + on;
}

namespace {
const char* const kMergedKey = "SELECT t.cluster, t.node, t.gpu_uuid, t.period_start, t.windows, "
                               "trim_scale(t.cost_micros::numeric), trim_scale(t.digests)";
const char* const kMergedOrder = " ORDER BY t.cluster, t.node, t.gpu_uuid, t.period_start";
}  // namespace

std::string merged_totals_sql(const std::string& where) {
  return kMergedKey + std::string(" FROM gpuledger.window_totals t WHERE ") + where + kMergedOrder;
}

std::string merged_rollups_sql(const std::string& where) {
  return kMergedKey + (", " + page_body("t.body") + " FROM gpuledger.rollups t WHERE t.verified AND ") + where +
         kMergedOrder + ", t.windows";
}

namespace {
// The GPUs with windows in the months of `starts` (one totals row a GPU-month:
// a superset of those with rows in the periods), sorted, as g; OFFSET 0
// fences them: sorted before they are joined. Not the periods' own rows: an
// hourly FOCUS of one node read the 2 million hour rows of the fleet to find
// its 8 GPUs.
std::string gpus_of_months(PgConnection& db, const std::vector<std::string>& starts, const FleetFilter& filter) {
  std::set<std::string> months;
  for (const auto& start : starts)
    months.insert(std::to_string(report::period_start(std::stoll(start), Period::kMonth)));
  return "(SELECT DISTINCT g.cluster, g.node, g.gpu_uuid FROM gpuledger.window_totals g WHERE " +
         whole_periods(db, Period::kMonth, {months.begin(), months.end()}, filter, "g") +
         " ORDER BY 1, 2, 3 OFFSET 0) g";
}

// Each GPU's rows of `table` (as t) in the periods, by its index on the key,
// in period order (OFFSET 0: once a GPU, in the GPUs' order).
std::string each_gpus(PgConnection& db, const std::string& table, const std::string& where, Period p,
                      const std::vector<std::string>& starts) {
  return " CROSS JOIN LATERAL (SELECT * FROM gpuledger." + table + " t WHERE " + where +
         "t.cluster = g.cluster AND t.node = g.node AND t.gpu_uuid = g.gpu_uuid AND " +
         whole_periods(db, p, starts, {}) + " ORDER BY t.period_start" + (table == "rollups" ? ", t.windows" : "") +
         " OFFSET 0) t";
}
}  // namespace

std::string key_ordered_totals(PgConnection& db, Period p, const std::vector<std::string>& starts,
                               const FleetFilter& filter) {
  return kMergedKey + (" FROM " + gpus_of_months(db, starts, filter)) + each_gpus(db, "window_totals", "", p, starts);
}

std::string key_ordered_rollups(PgConnection& db, Period p, const std::vector<std::string>& starts,
                                const FleetFilter& filter) {
  return kMergedKey + (", " + page_body("t.body")) + " FROM " + gpus_of_months(db, starts, filter) +
         each_gpus(db, "rollups", "t.verified AND ", p, starts);
}

WindowsSource windows_source(PgConnection& db, int64_t earliest) {
  if (db.query("SELECT to_regclass('gpuledger.packed_until') IS NOT NULL").text(0, 0) != "t") return {};
  // Every packed window starts before its GPU's packed_until: none after the latest.
  PgResult packed = db.query("SELECT max(end_time) FROM gpuledger.packed_until");
  return {!packed.null(0, 0) && packed.i64(0, 0) > earliest};
}

std::string WindowsSource::hours(const std::string& alias, const std::string& from, const std::string& to) const {
  if (!packs) return "";
  // A window's hour is start_time - start_time % 3600: from <= start_time < to puts it in (from - 3600, to).
  return " AND " + alias + ".hour_start > " + from + " - 3600 AND " + alias + ".hour_start < " + to;
}

std::string lateral_windows(PgConnection& db, int64_t earliest, const std::string& cluster, const std::string& node,
                            const std::string& gpu, const std::string& from, const std::string& to) {
  const WindowsSource source = windows_source(db, earliest);
  return " CROSS JOIN LATERAL (SELECT * FROM " + source.relation() + " y WHERE y.cluster = " + cluster +
         " AND y.node = " + node + " AND y.gpu_uuid = " + gpu + " AND y.start_time >= " + from +
         " AND y.start_time < " + to + source.hours("y", from, to) + " ORDER BY y.start_time OFFSET 0) x";
}

std::string key_ordered_windows(PgConnection& db, int64_t a, int64_t b, const FleetFilter& filter) {
  // count_windows' hour of a window: start_time - start_time % 3600 (truncated, as C++'s %).
  const int64_t first_hour = a - a % 3600;
  // OFFSET 0 fences the GPUs: sorted before they are joined.
  return "(SELECT DISTINCT t.cluster, t.node, t.gpu_uuid FROM gpuledger.window_totals t WHERE t.period = 'hour' "
         "AND t.period_start >= " +
         std::to_string(first_hour) + " AND t.period_start < " + std::to_string(b) + filter_sql(db, filter, "t") +
         " ORDER BY 1, 2, 3 OFFSET 0) g" +
         lateral_windows(db, a, "g.cluster", "g.node", "g.gpu_uuid", std::to_string(a), std::to_string(b));
}

std::string page_body(const std::string& column) {
  return "CASE WHEN octet_length(" + column + "::text) <= " + std::to_string(kPageBodyBytes) + " THEN " + column +
         "::text END";
}

RangePlan plan_range(int64_t from, int64_t to, std::optional<Period> coarsest) {
  RangePlan plan;
  for (const auto& piece : cut_range(from, to, coarsest)) {
    if (piece.period)
      plan.whole[*piece.period].push_back(std::to_string(piece.start));
    else
      plan.ragged.push_back({piece.start, piece.end});
  }
  return plan;
}

}  // namespace gpuledger::fleet
