#include "fleet/fleet_chart.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
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

// The whole months' chart rows (gpuledger.month_charts), one a GPU-month;
// a month where a GPU has none (a day not rolled up, a roll-up stale) is
// returned in `unsummed`, its rows left out.
void read_months(PgConnection& db, const std::vector<std::string>& months, const FleetFilter& filter,
                 report::ChartCosts& costs, std::vector<int64_t>& unsummed) {
  PgResult r = db.query("SELECT t.period_start, c.min_span, c.first_starts::text, c.accounts::text, c.teams::text, "
                        "c.micros::text, c.cluster IS NULL FROM " +
                        sorted_totals(whole_periods(db, Period::kMonth, months, filter)) + join_while_current("month_charts", "c", false));
  std::map<int64_t, report::ChartCosts> by_month;
  std::map<int64_t, bool> complete;
  for (int i = 0; i < r.rows(); ++i) {
    const int64_t month = r.i64(i, 0);
    bool& ok = complete.try_emplace(month, true).first->second;
    if (r.text(i, 6) == "t") ok = false;
    if (!ok) continue;
    report::ChartCosts& part = by_month[month];
    add_span(part, r.i64(i, 1));
    const auto starts = parse_array(r.text(i, 2)), accounts = parse_array(r.text(i, 3)),
               teams = parse_array(r.text(i, 4)), micros = parse_array(r.text(i, 5));
    if (accounts.size() != starts.size() || teams.size() != starts.size() || micros.size() != starts.size())
      throw Error("gpuledger.month_charts: arrays of different lengths");
    for (size_t k = 0; k < starts.size(); ++k)
      add_cost(part, std::stoll(starts[k]), accounts[k], teams[k], std::stoll(micros[k]));
  }
  for (const auto& [month, ok] : complete) {
    if (!ok) {
      unsummed.push_back(month);
      continue;
    }
    const report::ChartCosts& part = by_month[month];
    add_span(costs, part.min_window);
    for (const auto& [start, teams] : part.cost_by_start)
      for (const auto& [team, micros] : teams) costs.cost_by_start[start][team] += micros;
  }
}

// The whole periods' rows (gpuledger.rollup_charges); false when a GPU's
// period has none. Grouped by team label, and by account only for those that
// may be special (report::team_key: "__name__" is its own team): a few rows a
// period, not one per account.
bool read_periods(PgConnection& db, Period period, const std::vector<std::string>& starts, const FleetFilter& filter,
                  report::ChartCosts& costs) {
  PgResult r = db.query(
      "SELECT c.first_start, c.charged, CASE WHEN left(c.account, 2) = '__' THEN c.account ELSE '' END, c.team, "
      "sum(c.micros)::bigint, min(c.span), c.period IS NULL FROM " +
      sorted_totals(whole_periods(db, period, starts, filter)) + join_while_current("rollup_charges", "c") +
      joined_periods(db, "c", period, starts) + " GROUP BY 1, 2, 3, 4, 7");
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
  // By day: whole months from their one row a GPU, the days around them from theirs.
  const RangePlan plan = plan_range(from, to, period == Period::kDay ? Period::kMonth : period);
  auto whole = [&](Period p) {
    const auto it = plan.whole.find(p);
    return it == plan.whole.end() ? std::vector<std::string>{} : it->second;
  };
  const std::vector<std::string> months = period == Period::kDay ? whole(Period::kMonth) : std::vector<std::string>{};
  std::vector<std::string> starts = whole(period);
  if (months.empty() && starts.empty()) return std::nullopt;
  report::ChartCosts costs;  // from the first whole period's start to the last's end: they are contiguous
  costs.from = INT64_MAX;
  auto cover = [&](const std::vector<std::string>& list, Period p) {
    for (const auto& start : list) {
      const int64_t s = std::stoll(start);
      costs.from = std::min(costs.from, s);
      costs.to = std::max(costs.to, report::period_end(s, p));
    }
  };
  cover(months, Period::kMonth);
  cover(starts, period);
  bool complete = true;
  in_snapshot(db, [&] {
    if (!months.empty()) {
      std::vector<int64_t> unsummed;
      read_months(db, months, filter, costs, unsummed);
      for (int64_t month : unsummed)
        for (int64_t day = month; day < report::period_end(month, Period::kMonth); day += 86400)
          starts.push_back(std::to_string(day));
    }
    if (!starts.empty()) complete = read_periods(db, period, starts, filter, costs);
  });
  if (!complete) return std::nullopt;
  return costs;
}

}  // namespace gpuledger::fleet
