// A fleet report's chart from the server (fleet schema 6, issue 30): a JSON or
// HTML report of a month reads its rows at month roll-ups and its cost over
// time from gpuledger.rollup_charges, which the database fills from the day
// and hour roll-ups it verified. Its chart, bill id and money are the report's
// read at day roll-ups, to the second and the micro-unit; a roll-up that no
// longer matches its windows, or was never verified, is not summed (the days
// are read again), and an agent can neither read nor write the table.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_process.h"
#include "common/error.h"
#include "fleet/fleet_chart.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_rollups.h"
#include "ledger/hourly_rollup.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/window_json.h"
#include "fleet_db_fixture.h"
#include "report/bill.h"
#include "report/report_time.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;

constexpr int64_t kFeb = kFleetDay0 + 17 * 86400;   // 2027-02-01T00:00:00Z
constexpr int64_t kMar = kFeb + 28 * 86400;         // 2027-03-01T00:00:00Z
constexpr int64_t kGenerated = kMar + 86400;        // SOURCE_DATE_EPOCH

// February on two GPUs, in windows of three hours that tile it, with what
// makes a team key: an account without a team label, a charge with no account
// record (special) on some days, and GPU-b's days starting a minute late. One
// window in March completes February for the shipper.
std::vector<ledger::WindowRecord> february() {
  std::vector<ledger::WindowRecord> ws;
  for (int64_t day = 0; day < 28; ++day)
    for (int64_t h = 0; h < 24; h += 3)
      for (const char* gpu : {"GPU-a", "GPU-b"}) {
        const int64_t start = kFeb + day * 86400 + h * 3600 + (gpu[4] == 'b' ? 60 : 0);
        auto w = fleet_window(start, gpu, (day * 24 + h) % 97);
        w.end = start + 3 * 3600;
        auto c = w.accounts[1];
        c.account = "k8s/pod-c";
        c.labels = {"ml", "pod-c", "main", ""};
        w.accounts.push_back(c);
        w.charges.push_back({"k8s/pod-c", ledger::ChargeKind::kIdle, 3'000});
        w.idle_micros += 3'000;
        w.cost_micros += 3'000;
        if (day % 4 == 2) {
          w.charges.push_back({"__unallocated__", ledger::ChargeKind::kIdle, 5'000});
          w.idle_micros += 5'000;
          w.cost_micros += 5'000;
        }
        ws.push_back(w);
      }
  ws.push_back(fleet_window(kMar + 600, "GPU-a"));
  return ws;
}

// The report as it was made before the server summed its chart: read at the
// chart's period (days for a month, hours for a month to date), every
// roll-up's body parsed.
std::string read_at(fleet::PgConnection& db, const std::string& format, int64_t from = kFeb, int64_t to = kMar,
                    Period period = Period::kDay) {
  std::string digest;
  const report::BillSource source = fleet_bill_source(db, from, to, period, digest);
  report::BillRequest q;
  q.from = from;
  q.to = to;
  q.format = report::parse_format(format);
  q.generated_at = kGenerated;
  return report::render_bill(source, q);
}

// A chart's sums as `start|team|micros` lines, and the same from the hour
// rows the server keeps (rollup_charges) of [from, to): what any chart by the
// hour must add up to.
std::string chart_lines(const report::ChartCosts& chart) {
  std::string lines;
  for (const auto& [start, teams] : chart.cost_by_start)
    for (const auto& [team, micros] : teams)
      lines += std::to_string(start) + "|" + team + "|" + std::to_string(micros) + "\n";
  return lines;
}
std::string hour_rows(PgServer& pg, int64_t from, int64_t to) {
  return pg.psql(
      "SELECT first_start, CASE WHEN left(account, 2) = '__' THEN account WHEN team = '' THEN '(no team)' "
      "ELSE team END AS t, sum(micros) FROM gpuledger.rollup_charges WHERE period = 'hour' AND "
      "period_start >= " +
      std::to_string(from) + " AND period_start < " + std::to_string(to) + " AND charged GROUP BY 1, 2 ORDER BY 1, 2");
}

// What the chart and the money of a JSON report are: read at months with the
// server's chart, or at days, the same to the micro-unit and to the second
// (the rest is coarser where months are read: a merged window's GPU-hours are
// summed in another order).
void expect_same_chart_and_money(const std::string& a, const std::string& b) {
  const auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
  EXPECT_EQ(ja["bucket_seconds"], jb["bucket_seconds"]);
  EXPECT_EQ(ja["cost_by_team_over_time"], jb["cost_by_team_over_time"]);
  EXPECT_EQ(ja["audit"]["bill_id"], jb["audit"]["bill_id"]);
  auto money = [](const nlohmann::json& j) {
    std::map<std::string, std::vector<int64_t>> out;
    for (const auto& row : j["rows"])
      out[row["key"]] = {row["cost_busy_micros"], row["cost_idle_micros"], row["cost_memory_micros"]};
    out["TOTAL"] = {j["total"]["cost_total_micros"]};
    return out;
  };
  EXPECT_EQ(money(ja), money(jb));
}

// The HTML's cost-over-time chart.
std::string chart_of(const std::string& html) {
  const size_t at = html.find("<svg id=\"chart-cost-over-time\"");
  EXPECT_NE(at, std::string::npos);
  return at == std::string::npos ? "" : html.substr(at, html.find("</svg>", at) - at);
}

class FleetChart : public FleetDb {
 protected:
  void SetUp() override {
    FleetDb::SetUp();
    ASSERT_EQ(fleet::migrate(*admin_, kFeb), fleet::kFleetSchemaVersion);  // February's and March's partitions
    path_ = (scratch_ / "ledger.db").string();
    store_ = std::make_unique<ledger::Store>(path_);
    store_->insert_windows(february());
  }
  void ship(int64_t rollups) {
    fleet::FleetShipper shipper(shipper_options(pg_->conninfo(), pg_->admin_password_file(), path_, {"prod", "node-1"}));
    shipper.start();
    ASSERT_TRUE(eventually([&] { return shipper.status().pending == 0 && count("rollups") == rollups; },
                           std::chrono::seconds(120)))
        << shipper.status().reason << "; roll-ups: " << count("rollups");
    shipper.stop();
  }
  std::string cli(const std::string& format, const std::string& range = "--month 2027-02") {
    const Proc p = run("SOURCE_DATE_EPOCH=" + std::to_string(kGenerated) + " " + gpuledger() + " report --fleet-db '" +
                           pg_->conninfo() + "' --fleet-db-password-file " + pg_->admin_password_file() + " " + range +
                           " --by team --format " + format,
                       " 2>/dev/null");
    EXPECT_EQ(p.status, 0) << p.out;
    return p.out;
  }
  std::string path_;
  std::unique_ptr<ledger::Store> store_;
};

// February: 2 GPUs x (28 days x 8 hours with windows + 1 month) roll-ups.
constexpr int64_t kRollups = 2 * (28 * 8 + 28 + 1);

TEST_F(FleetChart, AMonthsJsonAndHtmlReadMonthsAndShowTheSameChartAndMoneyAsItsDays) {
  ship(kRollups);
  std::string cost = pg_->psql("SELECT sum(cost_micros) FROM gpuledger.windows WHERE start_time < " + std::to_string(kMar));
  cost.pop_back();
  EXPECT_EQ(pg_->psql("SELECT period, count(*), sum(micros), count(*) FILTER (WHERE NOT charged) "
                      "FROM gpuledger.rollup_charges GROUP BY 1 ORDER BY 1"),
            "day|" + std::to_string(2 * 28 * 3 + 2 * 7) + "|" + cost + "|0\nhour|" +
                std::to_string(2 * 28 * 8 * 3 + 2 * 7 * 8) + "|" + cost + "|0\n")
      << "a row per account charged in each verified day and hour; __unallocated__ on 7 days a GPU";

  EXPECT_EQ(pg_->psql("SELECT gpu_uuid, cardinality(micros), min_span FROM gpuledger.month_charts ORDER BY 1"),
            "GPU-a|" + std::to_string(28 * 3 + 7) + "|86400\nGPU-b|" + std::to_string(28 * 3 + 7) + "|86400\n")
      << "February's chart, one row a GPU";
  const auto chart = fleet::read_chart_costs(*admin_, kFeb, kMar, {}, Period::kDay);
  ASSERT_TRUE(chart.has_value());
  EXPECT_EQ(chart->from, kFeb);
  EXPECT_EQ(chart->to, kMar);
  EXPECT_EQ(chart->min_window, 86400) << "a day's first window start to its last window's end";
  EXPECT_EQ(chart->cost_by_start.size(), 2u * 28) << "GPU-b's days start a minute late";
  EXPECT_EQ(chart->cost_by_start.at(kFeb + 86400 + 60).at("(no team)"), 8 * 3'000) << "pod-c has no team";
  EXPECT_EQ(chart->cost_by_start.at(kFeb + 2 * 86400).at("__unallocated__"), 8 * 5'000);
  int months = 0;
  fleet::for_each_fleet_window(*admin_, kFeb, kMar, {}, Period::kMonth, [&](ledger::WindowRecord&&) { ++months; });
  EXPECT_EQ(months, 2) << "the rows: one month roll-up a GPU";

  const std::string fast = cli("json"), days = read_at(*admin_, "json");
  expect_same_chart_and_money(fast, days);
  EXPECT_NE(fast.find("\"bucket_seconds\": 86400"), std::string::npos);
  EXPECT_EQ(chart_of(cli("html")), chart_of(read_at(*admin_, "html")));
  // Without a month's chart row (its days were not all rolled up when it came), its days' rows serve.
  pg_->psql("DELETE FROM gpuledger.month_charts WHERE gpu_uuid = 'GPU-b'");
  const auto by_days = fleet::read_chart_costs(*admin_, kFeb, kMar, {}, Period::kDay);
  ASSERT_TRUE(by_days.has_value());
  EXPECT_EQ(by_days->cost_by_start, chart->cost_by_start);
  EXPECT_EQ(by_days->min_window, chart->min_window);
  expect_same_chart_and_money(cli("json"), days);
}

// A few days' chart is by the hour (a month to date's too): the range's
// whole days from their one row a GPU-day (day_charts), the hours after them
// from their rows, found by their period and starts (a LEFT JOIN's condition
// on the roll-ups' side, given to PostgreSQL explicitly), none left out at
// either end, and their money the windows'.
TEST_F(FleetChart, AFewDaysChartIsTheRangesHoursRowsAndTheirWindowsMoney) {
  ship(kRollups);
  const int64_t from = kFeb + 2 * 86400, to = kFeb + 5 * 86400 + 5 * 3600;  // ends mid-day
  const auto chart = fleet::read_chart_costs(*admin_, from, to, {}, Period::kHour);
  ASSERT_TRUE(chart.has_value());
  EXPECT_EQ(chart->from, from);
  EXPECT_EQ(chart->to, to);
  EXPECT_EQ(chart_lines(*chart), hour_rows(*pg_, from, to));
  int64_t charted = 0;
  for (const auto& [start, teams] : chart->cost_by_start)
    for (const auto& [team, micros] : teams) charted += micros;
  std::string cost =
      pg_->psql("SELECT sum(cost_micros) FROM gpuledger.windows WHERE start_time >= " + std::to_string(from) +
                " AND start_time < " + std::to_string(to));
  cost.pop_back();
  EXPECT_EQ(std::to_string(charted), cost);
  EXPECT_EQ(chart->cost_by_start.size(), 2u * (3 * 8 + 2))
      << "two GPUs, a window every 3 hours: 8 a day, 2 in the last 5 hours";
}

// A month to date: its 14 whole days from one row a GPU-day (day_charts,
// schema 13: a day's hours by first start and team, gathered when its day
// roll-up was verified), its 12 whole hours after them from their rows. A day
// where a GPU has no such row (an hour not rolled up when the day came) is
// read from its hours: the same sums, the same JSON as read at hours.
TEST_F(FleetChart, AMonthToDatesWholeDaysAreChartedFromOneRowAGpuDay) {
  ship(kRollups);
  EXPECT_EQ(pg_->psql("SELECT count(*), min(cardinality(micros)), max(cardinality(micros)), min(min_span), "
                      "max(min_span) FROM gpuledger.day_charts"),
            std::to_string(2 * 28) + "|24|32|10800|10800\n")
      << "8 windows of 3 hours a GPU-day, 3 teams in each; __unallocated__ too every 4th day";
  const int64_t to = kFeb + 14 * 86400 + 12 * 3600 + 1800, hours_end = to - 1800;
  const auto chart = fleet::read_chart_costs(*admin_, kFeb, to, {}, Period::kHour);
  ASSERT_TRUE(chart.has_value());
  EXPECT_EQ(chart->from, kFeb);
  EXPECT_EQ(chart->to, hours_end) << "the last half hour is the windows'";
  EXPECT_EQ(chart->min_window, 3 * 3600);
  EXPECT_EQ(chart_lines(*chart), hour_rows(*pg_, kFeb, hours_end));
  EXPECT_EQ(chart->cost_by_start.size(), 2u * (14 * 8 + 4));
  pg_->psql("DELETE FROM gpuledger.rollup_charges WHERE period = 'hour' AND period_start >= " +
            std::to_string(kFeb + 5 * 86400) + " AND period_start < " + std::to_string(kFeb + 6 * 86400));
  const auto from_days = fleet::read_chart_costs(*admin_, kFeb, to, {}, Period::kHour);
  ASSERT_TRUE(from_days.has_value());
  EXPECT_EQ(from_days->cost_by_start, chart->cost_by_start) << "a whole day's hours are its row's, not their own";

  pg_->psql("DELETE FROM gpuledger.day_charts WHERE gpu_uuid = 'GPU-b' AND period_start = " +
            std::to_string(kFeb + 2 * 86400));
  const auto by_hours = fleet::read_chart_costs(*admin_, kFeb, to, {}, Period::kHour);
  ASSERT_TRUE(by_hours.has_value());
  EXPECT_EQ(by_hours->cost_by_start, chart->cost_by_start);
  EXPECT_EQ(by_hours->min_window, chart->min_window);
  const std::string range = "--from " + std::to_string(kFeb) + " --to " + std::to_string(to);
  const std::string fast = cli("json", range), hours = read_at(*admin_, "json", kFeb, to, Period::kHour);
  expect_same_chart_and_money(fast, hours);
  EXPECT_NE(fast.find("\"bucket_seconds\": 43200"), std::string::npos);
  EXPECT_EQ(chart_of(cli("html", range)), chart_of(read_at(*admin_, "html", kFeb, to, Period::kHour)));
}

// A month to date's whole days from one row a node-day (node_day_charts,
// schema 16: its GPUs' day rows summed, written by the database as it
// verifies each day roll-up): the same chart as from the GPUs' rows. A
// node's row is read only while it sums exactly the GPU-days the node has,
// each as window_totals has it: a row missing, naming a GPU fewer, or made
// from a count that is no longer the GPU's, leaves its day to the GPUs' rows.
TEST_F(FleetChart, AMonthToDatesWholeDaysAreChartedFromOneRowANodeDay) {
  ship(kRollups);
  EXPECT_EQ(pg_->psql("SELECT count(*), min(cardinality(gpus)), max(cardinality(gpus)), min(cardinality(micros)), "
                      "max(cardinality(micros)), min(min_span) FROM gpuledger.node_day_charts"),
            "28|2|2|48|64|10800\n")
      << "one row a day of node-1's two GPUs, whose days start a minute apart: 2 x 8 x 3 elements, 4 more "
         "every 4th day";
  const int64_t to = kFeb + 14 * 86400 + 12 * 3600 + 1800;
  auto chart = [&] {
    const auto c = fleet::read_chart_costs(*admin_, kFeb, to, {}, Period::kHour);
    EXPECT_TRUE(c.has_value());
    return c ? chart_lines(*c) : "";
  };
  const std::string by_node = chart();
  EXPECT_EQ(by_node, hour_rows(*pg_, kFeb, to - 1800));
  // The GPUs' rows are not read where the nodes' are current: emptied, the chart is the same.
  pg_->psql("UPDATE gpuledger.day_charts SET micros = '{}', first_starts = '{}', accounts = '{}', teams = '{}'");
  EXPECT_EQ(chart(), by_node);
  // The nodes' rows are: one day's money changed by the owner shows.
  const std::string day3 = std::to_string(kFeb + 3 * 86400);
  pg_->psql("UPDATE gpuledger.node_day_charts SET micros[1] = micros[1] + 1 WHERE period_start = " + day3);
  EXPECT_NE(chart(), by_node);
  pg_->psql("UPDATE gpuledger.node_day_charts SET micros[1] = micros[1] - 1 WHERE period_start = " + day3);
  EXPECT_EQ(chart(), by_node);
  // Rows that do not sum the node's current GPU-days: their days from the GPUs' rows (put back first).
  pg_->psql(
      "DELETE FROM gpuledger.day_charts; DELETE FROM gpuledger.node_day_charts; INSERT INTO "
      "gpuledger.day_charts SELECT c.* FROM gpuledger.rollups f CROSS JOIN LATERAL "
      "gpuledger.gathered_chart_of(f, 'hour') c WHERE f.verified AND f.period = 'day'");
  EXPECT_EQ(chart(), by_node) << "no node rows at all";
  pg_->psql("DELETE FROM gpuledger.schema_migrations WHERE version >= 16");  // 16, and 17 and 18 again (repeatable)
  ASSERT_EQ(fleet::migrate(*admin_, kFeb), fleet::kFleetSchemaVersion);
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.node_day_charts"), "28\n") << "schema 16 gathers the days";
  EXPECT_EQ(chart(), by_node);
  for (const std::string& stale :
       {"DELETE FROM gpuledger.node_day_charts WHERE period_start = " + day3,
        "UPDATE gpuledger.node_day_charts SET gpus = gpus[1:1], windows = windows[1:1], cost_micros = "
        "cost_micros[1:1], digests = digests[1:1], micros[1] = micros[1] + 7 WHERE period_start = " +
            day3,
        "UPDATE gpuledger.node_day_charts SET windows[2] = windows[2] + 1, micros[1] = micros[1] + 7 WHERE "
        "period_start = " +
            day3,
        "UPDATE gpuledger.node_day_charts SET digests[1] = digests[1] + 1, micros[1] = micros[1] + 7 WHERE "
        "period_start = " +
            day3}) {
    SCOPED_TRACE(stale);
    pg_->psql("BEGIN; CREATE TABLE public.keep AS SELECT * FROM gpuledger.node_day_charts WHERE period_start = " +
              day3 + "; " + stale + "; COMMIT");
    EXPECT_EQ(chart(), by_node);
    pg_->psql("BEGIN; DELETE FROM gpuledger.node_day_charts WHERE period_start = " + day3 +
              "; INSERT INTO gpuledger.node_day_charts SELECT * FROM public.keep; DROP TABLE public.keep; COMMIT");
  }
}

// A node that names GPUs without end: each of its day roll-ups would gather
// its whole day again (the square of its GPUs in the server's time), so a
// node of more than 256 GPU-days has no node row; its days are charted from
// its GPUs' rows. Here node-1's day 3 grown by GPU-days the owner writes
// (each with its current row): at 256 it is gathered, at 257 not.
TEST_F(FleetChart, ANodeOfMoreThan256GpuDaysIsNotGatheredIntoOneRow) {
  ship(kRollups);
  const std::string day3 = std::to_string(kFeb + 3 * 86400);
  auto grow_to = [&](int gpus) {
    pg_->psql("INSERT INTO gpuledger.window_totals SELECT 'day', " + day3 +
              ", 'prod', 'node-1', 'GPU-x' || i, 1, 5, 7 FROM generate_series(3, " + std::to_string(gpus) +
              ") i ON CONFLICT DO NOTHING; INSERT INTO gpuledger.day_charts SELECT " + day3 +
              ", 'prod', 'node-1', 'GPU-x' || i, 1, 5, 7, 60, '{" + day3 +
              "}', '{\"\"}', '{x-team}', '{5}' FROM generate_series(3, " + std::to_string(gpus) +
              ") i ON CONFLICT DO NOTHING");
    return pg_->psql(
        "SELECT count(*), coalesce(max(cardinality(gpus)), 0) FROM gpuledger.node_day_chart_of('prod', "
        "'node-1', " +
        day3 + ")");
  };
  EXPECT_EQ(grow_to(256), "1|256\n");
  pg_->psql("UPDATE gpuledger.day_charts SET windows = 2 WHERE gpu_uuid = 'GPU-x9' AND period_start = " + day3);
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.node_day_chart_of('prod', 'node-1', " + day3 + ")"), "0\n")
      << "a GPU-day whose row is not current: the day is not whole";
  pg_->psql("UPDATE gpuledger.day_charts SET windows = 1 WHERE gpu_uuid = 'GPU-x9' AND period_start = " + day3);
  EXPECT_EQ(grow_to(257), "0|0\n");
  pg_->psql("DELETE FROM gpuledger.node_day_charts WHERE period_start = " + day3);
  const auto chart = fleet::read_chart_costs(*admin_, kFeb, kFeb + 7 * 86400, {}, Period::kHour);
  ASSERT_TRUE(chart.has_value()) << "day 3 from its GPUs' rows";
  EXPECT_EQ(chart->cost_by_start.at(kFeb + 3 * 86400).at("x-team"), 255 * 5) << "the 255 GPUs written here";
}

// Team labels are a workload's: whatever bytes they hold (commas, quotes,
// braces, backslashes, the word NULL), the chart's keys are the labels, read
// through the server's arrays (day_charts) and its sums.
TEST_F(FleetChart, TeamLabelsComeBackThroughTheChartsArraysWhateverTheyHold) {
  const std::vector<std::string> hostile = {"a,b",  "q\"uote",       "back\\slash", "NULL",      "{}",
                                            " sp ", "\u00e9t\u00e9", "}\",{",       "(no team)x"};
  std::vector<ledger::WindowRecord> ws;
  for (size_t i = 0; i < hostile.size(); ++i) {  // a 2-hour window an hour a label, on March 1st
    auto w = fleet_window(kMar + static_cast<int64_t>(i) * 7200, "GPU-h");
    w.end = w.start + 7200;
    auto c = w.accounts[1];
    c.account = "k8s/pod-" + std::to_string(i);
    c.labels = {"ml", "pod-" + std::to_string(i), "main", hostile[i]};
    w.accounts.push_back(c);
    w.charges.push_back({c.account, ledger::ChargeKind::kIdle, 1'000 + static_cast<int64_t>(i)});
    w.idle_micros += 1'000 + static_cast<int64_t>(i);
    w.cost_micros += 1'000 + static_cast<int64_t>(i);
    ws.push_back(w);
  }
  ws.push_back(fleet_window(kMar + 86400 + 600, "GPU-h"));  // completes March 1st
  const std::string path = (scratch_ / "hostile.db").string();
  ledger::Store(path).insert_windows(ws);
  fleet::FleetShipper shipper(shipper_options(pg_->conninfo(), pg_->admin_password_file(), path, {"prod", "node-2"}));
  shipper.start();
  ASSERT_TRUE(eventually([&] { return count("day_charts") == 1; }, std::chrono::seconds(120)))
      << shipper.status().reason;
  shipper.stop();
  const auto chart = fleet::read_chart_costs(*admin_, kMar, kMar + 86400, {}, Period::kHour);
  ASSERT_TRUE(chart.has_value());
  for (size_t i = 0; i < hostile.size(); ++i) {
    const int64_t start = kMar + static_cast<int64_t>(i) * 7200;
    ASSERT_EQ(chart->cost_by_start.count(start), 1u) << i;
    EXPECT_EQ(chart->cost_by_start.at(start).at(hostile[i]), 1'000 + static_cast<int64_t>(i)) << hostile[i];
  }
}

TEST_F(FleetChart, ADayWhoseRollUpNoLongerMatchesIsReadAtDaysAndTheChartStaysTheSame) {
  ship(kRollups);
  // A late window into February 10th, its roll-ups not sent again: that day's and the month's no longer match.
  const auto late = fleet_window(kFeb + 9 * 86400 + 7200, "GPU-a", 5);
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  ASSERT_EQ(sink.ship({&late}), std::vector<Delivery>{Delivery::kStored});
  EXPECT_FALSE(fleet::read_chart_costs(*admin_, kFeb, kMar, {}, Period::kDay).has_value());
  EXPECT_FALSE(fleet::read_chart_costs(*admin_, kFeb + 8 * 86400, kFeb + 11 * 86400, {}, Period::kHour).has_value())
      << "its hour has no roll-up, its day's row no longer matches";
  expect_same_chart_and_money(cli("json"), read_at(*admin_, "json"));
  // The window's day again, rolled up by the shipper: summed by the server again.
  store_->insert_window(late);
  ship(kRollups + 2 + 1);  // February 10th's 02:00 hour is new; the day and the month again
  ASSERT_TRUE(fleet::read_chart_costs(*admin_, kFeb, kMar, {}, Period::kDay).has_value());
  expect_same_chart_and_money(cli("json"), read_at(*admin_, "json"));
  // By the hour too: February 10th's row a GPU-day came again with its day.
  const auto hours = fleet::read_chart_costs(*admin_, kFeb + 8 * 86400, kFeb + 11 * 86400, {}, Period::kHour);
  ASSERT_TRUE(hours.has_value());
  EXPECT_EQ(chart_lines(*hours), hour_rows(*pg_, kFeb + 8 * 86400, kFeb + 11 * 86400));
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.day_charts WHERE gpu_uuid = 'GPU-a' AND period_start = " +
                      std::to_string(kFeb + 9 * 86400)),
            "2\n")
      << "the stale one and the current one";
}

TEST_F(FleetChart, OnlyTheServerWritesTheChartsRowsAndOnlyOfRollUpsItVerified) {
  const std::string role = fleet::add_node_role(*admin_, "node-1", "prod");
  fleet::PgConnection agent(pg_->conninfo(role), pg_->set_password(role));
  EXPECT_THROW(agent.query("SELECT count(*) FROM gpuledger.rollup_charges"), Error);
  EXPECT_THROW(agent.query("SELECT count(*) FROM gpuledger.month_charts"), Error);
  EXPECT_THROW(agent.query("SELECT count(*) FROM gpuledger.day_charts"), Error);
  EXPECT_THROW(agent.query("SELECT count(*) FROM gpuledger.node_day_charts"), Error);
  for (const std::string& sql :
       {"INSERT INTO gpuledger.day_charts VALUES (" + std::to_string(kFeb) +
            ", 'prod', 'node-1', 'GPU-a', 8, 1, 0, "
            "3600, '{" +
            std::to_string(kFeb) + "}', '{\"\"}', '{vision}', '{1000000000}')",
        "INSERT INTO gpuledger.node_day_charts VALUES (" + std::to_string(kFeb) +
            ", 'prod', 'node-1', '{GPU-a}', '{8}', '{1}', '{0}', 3600, '{" + std::to_string(kFeb) +
            "}', '{\"\"}', '{vision}', '{1000000000}')",
        std::string("SELECT count(*) FROM gpuledger.gathered_chart_of(NULL::gpuledger.rollups, 'hour')"),
        std::string("SELECT count(*) FROM gpuledger.node_day_chart_of('prod', 'node-1', 0)"),
        std::string("SELECT gpuledger.gather_node_day('prod', 'node-1', 0)")}) {
    try {
      agent.exec(sql);
      ADD_FAILURE() << sql << " ran as a node's role";
    } catch (const Error& e) {
      EXPECT_EQ(fleet::sqlstate_of(e.what()), "42501") << e.what();
    }
  }
  EXPECT_THROW(agent.exec("INSERT INTO gpuledger.rollup_charges VALUES ('day', " + std::to_string(kFeb) +
                          ", 'prod', 'node-1', 'GPU-a', 8, 1, 0, " + std::to_string(kFeb) +
                          ", 86400, 'k8s/pod-a', 'vision', 1000000000, true)"),
               Error);
  // A forged day roll-up (the right count and cost, not the windows' digests): refused, so not summed.
  fleet::FleetSinkPostgres sink(agent, {"prod", "node-1"});
  const auto ws = february();
  std::vector<ledger::WindowRecord> day0(ws.begin(), ws.begin() + 16);
  ASSERT_EQ(sink.ship(pointers(day0)), std::vector<Delivery>(16, Delivery::kStored));
  std::vector<ledger::WindowRecord> gpu_a;
  for (const auto& w : day0)
    if (w.slot.uuid == "GPU-a") gpu_a.push_back(w);
  auto forged = ledger::merge_windows(gpu_a);
  for (auto& c : forged.charges)  // the same cost and count, 0.05 moved from pod-b to pod-a
    if (c.kind == ledger::ChargeKind::kBusy) c.micros += c.account == "k8s/pod-a" ? 50'000 : c.account == "k8s/pod-b" ? -50'000 : 0;
  std::string totals = pg_->psql("SELECT period_start || ', ' || windows || ', ' || cost_micros || ', ' || digests "
                                 "FROM gpuledger.window_totals WHERE period = 'day' AND gpu_uuid = 'GPU-a'");
  totals.pop_back();
  agent.exec("INSERT INTO gpuledger.rollups(period, period_start, windows, cost_micros, digests, cluster, node, "
             "gpu_uuid, digest, body) VALUES ('day', " + totals + ", 'prod', 'node-1', 'GPU-a', 'x', " +
             agent.literal(fleet::window_to_json(forged)) + ")");
  EXPECT_EQ(pg_->psql("SELECT verified FROM gpuledger.rollups"), "f\n");
  EXPECT_EQ(count("rollup_charges"), 0);
  EXPECT_FALSE(fleet::read_chart_costs(*admin_, kFeb, kFeb + 86400, {}, Period::kDay).has_value());
}

TEST_F(FleetChart, AnUpgradeFromSchemaFiveSumsTheRollUpsAlreadyVerified) {
  ship(kRollups);
  const std::string rows = "SELECT period, cluster, node, gpu_uuid, period_start, account, team, micros "
                           "FROM gpuledger.rollup_charges ORDER BY 1, 2, 3, 4, 5, 6";
  const std::string months = "SELECT * FROM gpuledger.month_charts ORDER BY gpu_uuid";
  const std::string before = pg_->psql(rows), months_before = pg_->psql(months), cli_before = cli("json");
  // Back to schema 5 as it was, but for migration 7's windows (migration 6 reads roll-ups and totals only).
  pg_->psql(
      "DELETE FROM gpuledger.schema_migrations WHERE version >= 6; "
      "DROP TRIGGER keep_rollup_charges ON gpuledger.rollups; DROP FUNCTION gpuledger.keep_rollup_charges(); "
      "DROP FUNCTION gpuledger.charge_rows_of(gpuledger.rollups); DROP FUNCTION "
      "gpuledger.month_chart_of(gpuledger.rollups); "
      "DROP FUNCTION gpuledger.gathered_chart_of(gpuledger.rollups, text); "
      "DROP TABLE gpuledger.rollup_charges, gpuledger.month_charts; "
      "DROP FUNCTION gpuledger.check_rollup(gpuledger.rollups); "
      "ALTER FUNCTION gpuledger.check_rollup_5(gpuledger.rollups) RENAME TO check_rollup; "
      "DROP FUNCTION gpuledger.create_partitions(bigint); DROP FUNCTION gpuledger.create_charges_partition(bigint); "
      "ALTER FUNCTION gpuledger.create_partitions_5(bigint) RENAME TO create_partitions");
  ASSERT_EQ(fleet::migrate(*admin_, kFeb, 6), 6);
  EXPECT_EQ(pg_->psql(rows), before);
  EXPECT_EQ(pg_->psql(months), months_before);
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.month_charts"), "2\n");
  EXPECT_EQ(fleet::schema_version(*admin_), 6);
  EXPECT_EQ(pg_->psql("SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON "
                      "c.oid = i.inhrelid WHERE i.inhparent = 'gpuledger.rollup_charges'::regclass"),
            "rollup_charges_2027_01,rollup_charges_2027_02,rollup_charges_2027_03\n");
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM pg_inherits WHERE inhparent = 'gpuledger.month_charts'::regclass"), "3\n");
  pg_->psql("INSERT INTO gpuledger.schema_migrations(version) SELECT generate_series(7, " +
            std::to_string(fleet::kFleetSchemaVersion) + ")");  // their objects are still there
  EXPECT_EQ(cli("json"), cli_before);
}

TEST_F(FleetChart, AnUpgradeFromSchemaTwelveGathersTheDaysAlreadyVerified) {
  ship(kRollups);
  const std::string days = "SELECT * FROM gpuledger.day_charts ORDER BY gpu_uuid, period_start";
  const std::string before = pg_->psql(days), cli_before = cli("json", "--from " + std::to_string(kFeb) + " --to " +
                                                                           std::to_string(kFeb + 10 * 86400 + 3600));
  ASSERT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.day_charts"), std::to_string(2 * 28) + "\n");
  pg_->psql(
      "DELETE FROM gpuledger.schema_migrations WHERE version >= 13; "
      "DROP FUNCTION gpuledger.month_chart_of(gpuledger.rollups); "
      "DROP FUNCTION gpuledger.gathered_chart_of(gpuledger.rollups, text); DROP TABLE gpuledger.day_charts");
  ASSERT_EQ(fleet::migrate(*admin_, kFeb), fleet::kFleetSchemaVersion);  // 13, and 14 to 19 again (repeatable)
  EXPECT_EQ(pg_->psql(days), before);
  EXPECT_EQ(pg_->psql("SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON "
                      "c.oid = i.inhrelid WHERE i.inhparent = 'gpuledger.day_charts'::regclass"),
            "day_charts_2027_01,day_charts_2027_02,day_charts_2027_03\n");
  EXPECT_EQ(cli("json", "--from " + std::to_string(kFeb) + " --to " + std::to_string(kFeb + 10 * 86400 + 3600)),
            cli_before);
}

}  // namespace
}  // namespace gpuledger::testing
