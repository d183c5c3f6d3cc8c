#pragma once
// The SQL the fleet database's readers share (fleet_reader.h, fleet_chart.h):
// a range cut into whole periods, the window_totals rows of those periods, the
// filter, and a read-only snapshot.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet/fleet_periods.h"
#include "fleet/fleet_reader.h"

namespace gpuledger::fleet {

class PgConnection;

// " AND <table>.cluster = ... AND <table>.node = ..." of the filter.
std::string filter_sql(PgConnection& db, const FleetFilter& filter, const std::string& table);

// Starts the read-only snapshot (REPEATABLE READ) of a report; `shared`, when
// not empty, is another connection's (pg_export_snapshot): this one then
// sees exactly what that one does.
void begin_snapshot(PgConnection& db, const std::string& shared = {});
// fn in a snapshot: the FleetSnapshot open on db, else one of its own.
void in_snapshot(PgConnection& db, const std::function<void()>& fn);

// An array literal of PostgreSQL's text form, quoted for SQL.
std::string array_literal(PgConnection& db, const std::vector<std::string>& items);
// One element of an array's text form appended to `text`: quoted, its quotes
// and backslashes escaped, so any bytes (a comma, a brace, the word NULL) stay one element.
void append_array_element(std::string& text, std::string_view item);
// The condition on window_totals rows (as `alias`) of the period's given starts, and the filter.
std::string whole_periods(PgConnection& db, Period p, const std::vector<std::string>& starts, const FleetFilter& filter,
                          const std::string& alias = "t");
// The same periods' condition on a table joined to them (as `alias`, with
// period and period_start columns), for the ON clause of a LEFT JOIN:
// PostgreSQL does not carry t's conditions across one, and scanned and sorted
// the whole month's rows of the joined table (docs/performance.md, "A
// month to date's chart").
std::string joined_periods(PgConnection& db, const std::string& alias, Period p,
                           const std::vector<std::string>& starts);

// The two scans a merge of whole periods reads in key order (cluster, node,
// gpu_uuid, period_start; fleet_reader.cpp, merge_period): the window_totals
// rows (as t) `where` picks, and the verified roll-ups it picks with their
// bodies, each row's key then its count, cost and digest sum as equal
// numbers print equal (trim_scale). The totals' scan is index-only from
// schema 11 (fleet_migration_11.cpp).
std::string merged_totals_sql(const std::string& where);
std::string merged_rollups_sql(const std::string& where);
// merged_totals_sql's and merged_rollups_sql's rows for the given starts of
// period p, in the same order by the queries' form rather than by a sort or
// a walk of an index: the GPUs with windows in those months, sorted, and
// each one's rows by the key's index, a GPU at a time. For hours: the
// roll-ups' index holds the whole month's, 24 a GPU-day, so its walk would
// read a month to date's every hour to keep 12, and the 96,000 probes of a
// join took 0.66-0.68 s of the server at 1,000 nodes, these two 0.08 s and
// 0.24-0.30 s (docs/performance.md, "Whole hours a GPU at a time"). Not for
// days: their walk is the faster there (one day 25 ms against 50).
std::string key_ordered_totals(PgConnection& db, Period p, const std::vector<std::string>& starts,
                               const FleetFilter& filter);
std::string key_ordered_rollups(PgConnection& db, Period p, const std::vector<std::string>& starts,
                                const FleetFilter& filter);
// The windows (as x) with a <= start_time < b and the filter, in key order
// (cluster, node, gpu_uuid, start_time) by the query's form, not a sort: the
// GPUs with windows in those hours (window_totals, whose hour rows
// count_windows writes with every window), sorted, and each one's windows
// by the primary key's index. A month to date's last 30 minutes at 1,000
// nodes, 240,000 windows with their bodies, sorted by the server spilled
// 269 MB to disk and sent nothing until all of it was sorted (0.8 s); read
// a GPU at a time, the first page comes at once (docs/performance.md,
// "A ragged end read a GPU at a time"). The reader checks the order.
std::string key_ordered_windows(PgConnection& db, int64_t a, int64_t b, const FleetFilter& filter);
// Each outer row's windows (as x) with `from` <= start_time < `to` and the
// given key, by the primary key's index in start order (OFFSET 0: a lateral
// subquery run once an outer row, in the outer rows' order; a cursor's plan
// is never parallel). The arguments are SQL expressions of the outer row.
std::string lateral_windows(PgConnection& db, int64_t earliest, const std::string& cluster, const std::string& node,
                            const std::string& gpu, const std::string& from, const std::string& to);
// Where a reader finds the windows that start at or after `earliest`, as
// `alias`: gpuledger.stored_windows (rows and packed hours, schema 17), a
// pack found by its hour, where a packed window may start that late (before
// the latest end in packed_until); else gpuledger.windows itself (the ragged
// end of a month to date, never packed; and an older schema, read by the
// tests of an upgrade). `from` and `to` are SQL expressions.
struct WindowsSource {
  bool packs = false;  // a packed window may start that late: stored_windows
  std::string relation() const { return packs ? "gpuledger.stored_windows" : "gpuledger.windows"; }
  // The bound on stored_windows' hour_start that finds the packs ("" for rows).
  std::string hours(const std::string& alias, const std::string& from, const std::string& to) const;
};
WindowsSource windows_source(PgConnection& db, int64_t earliest);
// A json column's text as a report's page carries it: NULL when it is over
// kPageBodyBytes (body_bounds.h), read apart by the reader (the row's finer
// periods, or the views). octet_length reads a stored value's size without
// detoasting it.
std::string page_body(const std::string& column);

// " LEFT JOIN gpuledger.<table> <alias> ON ...": the row of a roll-up (or of
// what the database derived from one) that carries the same count, cost and
// digest sum as window_totals' row t, i.e. that merged exactly the windows the
// database holds; the only condition under which a report reads it.
// `by_period`: the table has a period column (month_charts has months only).
std::string join_while_current(const std::string& table, const std::string& alias, bool by_period = true);

// A range cut (cut_range) into the starts of its whole periods, by period, and its ragged ends.
struct RangePlan {
  std::map<Period, std::vector<std::string>> whole;
  std::vector<std::pair<int64_t, int64_t>> ragged;
};
RangePlan plan_range(int64_t from, int64_t to, std::optional<Period> coarsest);

}  // namespace gpuledger::fleet
