#include "fleet/fleet_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fleet/fleet_sql.h"
#include "fleet/pg_connection.h"
#include "report/report_text.h"

namespace gpuledger::fleet {

namespace {

void add_cost(report::ChartCosts& costs, int64_t start, const std::string& account, const std::string& team,
              int64_t micros) {
  costs.cost_by_start[start][report::team_key(account, team)] += micros;
}
void add_span(report::ChartCosts& costs, int64_t span) {
  if (costs.min_window == 0 || span < costs.min_window) costs.min_window = span;
}

// A chart's sums: grouped by a hash of unsorted totals, which PostgreSQL may
// split over a worker. It guesses a few rows of window_totals for the
// periods' list and bounds, and sorted to group: a month's 720,000 array
// elements on disk (1.4 s against 0.56 s hashed), 14 days' 8 million in 4.5 s
// against 3.1 s hashed over two processes (grouping sets are never split). A
// hash table that outgrows work_mem spills to disk.
PgResult hashed_sums(PgConnection& db, const std::string& sql) {
  db.exec("SET LOCAL enable_sort = off");
  PgResult r = db.query(sql);
  db.exec("RESET enable_sort");
  return r;
}

// Chart sums by period start, first start, account and team, with each
// row's shortest part and whether a GPU (or node) lacked a current row there
// (a row with no start): added to `costs` for the periods where none lacked
// one, the others returned in `unsummed`.
void add_gathered(const PgResult& r, report::ChartCosts& costs, std::vector<int64_t>& unsummed) {
  std::map<int64_t, report::ChartCosts> by_period;
  std::map<int64_t, bool> complete;
  for (int i = 0; i < r.rows(); ++i) {
    const int64_t start = r.i64(i, 0);
    bool& ok = complete.try_emplace(start, true).first->second;
    if (r.text(i, 6) == "t") ok = false;
    report::ChartCosts& part = by_period[start];
    if (!r.null(i, 5)) add_span(part, r.i64(i, 5));
    if (!r.null(i, 1)) add_cost(part, r.i64(i, 1), r.text(i, 2), r.text(i, 3), r.i64(i, 4));
  }
  for (const auto& [start, ok] : complete) {
    if (!ok) {
      unsummed.push_back(start);
      continue;
    }
    const report::ChartCosts& part = by_period[start];
    add_span(costs, part.min_window);
    for (const auto& [first, teams] : part.cost_by_start)
      for (const auto& [team, micros] : teams) costs.cost_by_start[first][team] += micros;
  }
}

// Each sum's columns: by period, start, account and team (a gathered row's
// accounts are '' but those that may be special: gathered_chart_of); the
// shortest part; whether a row was missing. `from_where` joins the totals (t)
// to their chart rows (c, NULL where missing). The arrays are unnested in the
// select list (one row at a time), not by a lateral unnest in FROM, which
// stored each row's elements before reading them: 14 days of 1,000 nodes'
// node-day rows (4 million elements) summed in 1.07 s against 1.7 s. A missing
// row, or one of no element, reads as one element of NULLs, as the lateral
// join gave it: its missing flag and shortest part are still summed.
std::string gathered_sums(const std::string& from_where) {
  std::string cells;
  for (const auto& [column, type] : {std::pair{"first_starts", "bigint"}, std::pair{"accounts", "text"},
                                     std::pair{"teams", "text"}, std::pair{"micros", "bigint"}})
    cells += fmt::format("unnest(CASE WHEN cardinality(c.{0}) > 0 THEN c.{0} ELSE '{{NULL}}'::{1}[] END) AS {0}, ",
                         column, type);
  return "SELECT x.period_start, x.first_starts, x.accounts, x.teams, sum(x.micros)::bigint, min(x.min_span), "
         "bool_or(x.missing) FROM (SELECT t.period_start, " +
         cells + "c.min_span, c.node IS NULL AS missing FROM " + from_where + ") x GROUP BY 1, 2, 3, 4";
}

// The chart rows gathered a GPU-period (gpuledger.month_charts: a month's
// days; day_charts, schema 13: a day's hours) of the `outer` periods at
// `starts`, summed by the server by period start and team key: a few rows a
// period, not the 112,000 rows of arrays of 14 days of 1,000 nodes. A period
// where a GPU has no current row (a part not rolled up, a roll-up stale) is
// returned in `unsummed`, its rows left out.
void read_gathered(PgConnection& db, Period outer, const std::vector<std::string>& starts, const FleetFilter& filter,
                   report::ChartCosts& costs, std::vector<int64_t>& unsummed) {
  const std::string table = outer == Period::kMonth ? "month_charts" : "day_charts";
  add_gathered(hashed_sums(db, gathered_sums("gpuledger.window_totals t" + join_while_current(table, "c", false) +
                                             " WHERE " + whole_periods(db, outer, starts, filter))),
               costs, unsummed);
}

// Whole days from one row a node-day (node_day_charts, schema 16), used where
// it sums exactly the GPU-days the node has in window_totals, each as it is
// there (each GPU's count, cost and digest sum, in gpu_uuid's byte order):
// 14,000 rows of 288 elements for 14 days of the bench's 1,000 nodes, against
// day_charts' 112,000 of 72 (1.8 s against 4.1 s of one core). A day where a
// node's row is missing or stale is returned in `unsummed`: read from the
// GPUs' rows (read_gathered).
void read_node_days(PgConnection& db, const std::vector<std::string>& starts, const FleetFilter& filter,
                    report::ChartCosts& costs, std::vector<int64_t>& unsummed) {
  add_gathered(
      hashed_sums(db, gathered_sums(
                          "(SELECT t.cluster, t.node, t.period_start, array_agg(t.gpu_uuid ORDER BY t.gpu_uuid) g, "
                          "array_agg(t.windows ORDER BY t.gpu_uuid) w, array_agg(t.cost_micros ORDER BY t.gpu_uuid) m, "
                          "array_agg(t.digests ORDER BY t.gpu_uuid) d FROM gpuledger.window_totals t WHERE " +
                          whole_periods(db, Period::kDay, starts, filter) +
                          " GROUP BY 1, 2, 3) t LEFT JOIN gpuledger.node_day_charts c ON c.cluster = t.cluster AND "
                          "c.node = t.node AND c.period_start = t.period_start AND c.gpus = t.g AND c.windows = t.w "
                          "AND c.cost_micros = t.m AND c.digests = t.d")),
      costs, unsummed);
}

// The whole periods' rows (gpuledger.rollup_charges); false when a GPU's
// period has none. Grouped by team label, and by account only for those that
// may be special (report::team_key: "__name__" is its own team): a few rows a
// period, not one per account.
bool read_periods(PgConnection& db, Period period, const std::vector<std::string>& starts, const FleetFilter& filter,
                  report::ChartCosts& costs) {
  PgResult r = hashed_sums(
      db,
      "SELECT c.first_start, c.charged, CASE WHEN left(c.account, 2) = '__' THEN c.account ELSE '' END, c.team, "
      "sum(c.micros)::bigint, min(c.span), c.period IS NULL FROM gpuledger.window_totals t" +
          join_while_current("rollup_charges", "c") + joined_periods(db, "c", period, starts) + " WHERE " +
          whole_periods(db, period, starts, filter) + " GROUP BY 1, 2, 3, 4, 7");
  for (int i = 0; i < r.rows(); ++i) {
    if (r.text(i, 6) == "t") return false;
    add_span(costs, r.i64(i, 5));
    if (r.text(i, 1) == "t") add_cost(costs, r.i64(i, 0), r.text(i, 2), r.text(i, 3), r.i64(i, 4));
  }
  return true;
}

}  // namespace

std::optional<report::ChartCosts> read_chart_costs(PgConnection& db, int64_t from, int64_t to,
                                                   const FleetFilter& filter, Period period) {
  // Whole months (by day) or days (by hour) from their one row a GPU, the periods around them from theirs.
  const Period outer = period == Period::kDay ? Period::kMonth : Period::kDay;
  const RangePlan plan = plan_range(from, to, outer);
  auto whole = [&](Period p) {
    const auto it = plan.whole.find(p);
    return it == plan.whole.end() ? std::vector<std::string>{} : it->second;
  };
  const std::vector<std::string> gathered = whole(outer);
  std::vector<std::string> starts = whole(period);
  if (gathered.empty() && starts.empty()) return std::nullopt;
  report::ChartCosts costs;  // from the first whole period's start to the last's end: they are contiguous
  costs.from = INT64_MAX;
  auto cover = [&](const std::vector<std::string>& list, Period p) {
    for (const auto& start : list) {
      const int64_t s = std::stoll(start);
      costs.from = std::min(costs.from, s);
      costs.to = std::max(costs.to, report::period_end(s, p));
    }
  };
  cover(gathered, outer);
  cover(starts, period);
  bool complete = true;
  in_snapshot(db, [&] {
    if (!gathered.empty()) {
      std::vector<int64_t> unsummed;
      std::vector<std::string> by_gpu = gathered;  // the periods read from one row a GPU
      if (outer == Period::kDay) {
        std::vector<int64_t> stale;
        read_node_days(db, gathered, filter, costs, stale);
        by_gpu.clear();
        for (int64_t d : stale) by_gpu.push_back(std::to_string(d));
      }
      if (!by_gpu.empty()) read_gathered(db, outer, by_gpu, filter, costs, unsummed);
      for (int64_t o : unsummed)
        for (int64_t s = o; s < report::period_end(o, outer); s = report::period_end(s, period))
          starts.push_back(std::to_string(s));
    }
    if (!starts.empty()) complete = read_periods(db, period, starts, filter, costs);
  });
  if (!complete) return std::nullopt;
  return costs;
}

}  // namespace gpuledger::fleet
