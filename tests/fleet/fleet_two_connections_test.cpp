// A fleet report on two connections at once (issue 30): a CSV's rows (a
// month by day is 240,000 day roll-ups) read on both, and every other
// report's bill id digest and notes read on the second while the first reads
// the windows. The second joins the first's snapshot, so the report is the
// same bytes as one connection makes, and a server that takes no second
// connection gets the same report from one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "fleet/fleet_chart.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/second_reader.h"
#include "fleet_db_fixture.h"
#include "report/bill.h"
#include "report/report.h"
#include "report/report_time.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;

constexpr int64_t kDay0 = kFleetDay0;                 // 2027-01-15T00:00:00Z
constexpr int64_t kGenerated = kDay0 + 86400 + 7200;  // SOURCE_DATE_EPOCH: day 1 02:00, some rows partial

// The CSV as one connection reads it, in one pass.
std::string csv_in_one_read(fleet::PgConnection& db, int64_t from, int64_t to, report::Granularity g) {
  return export_in_one_read(db, from, to, report::Format::kCsv, g, kGenerated);
}

// The late window (ship()) is over its GPU's window at 05:00.
constexpr const char* kOverlap =
    "gpuledger report: 1 windows overlap another window of the same GPU, so that GPU time is billed twice (the "
    "first: GPU-a of prod/node-1 at 2027-01-16T05:00:30Z over prod/node-1's window from 2027-01-16T05:00:00Z; see "
    "gpuledger.overlaps)\n";

int64_t windows_in(fleet::PgConnection& db) {
  return db.query("SELECT count(*) FROM gpuledger.windows").i64(0, 0);
}

class FleetTwoConnections : public FleetDb {
 protected:
  void ship() { ship_two_gpus_and_a_late_window(*pg_, *admin_, scratch_); }
};

TEST_F(FleetTwoConnections, TheRowsReadOnTwoConnectionsAreTheBytesOneReads) {
  ASSERT_NO_FATAL_FAILURE(ship());
  const std::string reader_pw = pg_->add_login("finance", "gpuledger_reader");
  const std::string cli = "SOURCE_DATE_EPOCH=" + std::to_string(kGenerated) + " " + gpuledger() +
                          " report --fleet-db '" + pg_->conninfo("finance") + "' --fleet-db-password-file " +
                          reader_pw + " --format csv";
  auto check = [&](const std::string& how) {
    for (const auto& [from, to] :
         {std::pair{kDay0, kDay0 + 3 * 86400}, std::pair{kDay0 + 22 * 3600 + 600, kDay0 + 86400 + 5 * 3600 + 60}}) {
      for (const auto& [name, g] :
           {std::pair{"hour", report::Granularity::kHour}, {"day", report::Granularity::kDay}}) {
        SCOPED_TRACE(how + ", by " + name + " from " + report::format_rfc3339(from) + " to " +
                     report::format_rfc3339(to));
        const std::string err = (scratch_ / "stderr").string();
        const Proc out = run(cli + " --from " + report::format_rfc3339(from) + " --to " + report::format_rfc3339(to) +
                                 " --granularity " + name,
                             (" 2>" + err).c_str());
        ASSERT_EQ(out.status, 0) << out.out << slurp(err);
        EXPECT_EQ(out.out, csv_in_one_read(*admin_, from, to, g));
        EXPECT_EQ(slurp(err), kOverlap) << "the late window's overlap said once, nothing else";
      }
    }
  };
  check("two connections");
  // A role allowed one connection: the second is refused, the report read on the first.
  pg_->psql("ALTER ROLE finance CONNECTION LIMIT 1");
  check("one connection");
}

// Roll-ups whose bodies the owner broke after they were verified: each
// reader skips those it meets, and the report says how many once, as one
// reader does, whichever reader met them.
TEST_F(FleetTwoConnections, BodiesEitherReaderCouldNotReadAreSaidOnce) {
  ASSERT_NO_FATAL_FAILURE(ship());
  pg_->psql("UPDATE gpuledger.rollups SET body = '{\"start\": 1}' WHERE period = 'hour'");
  const std::string reader_pw = pg_->add_login("finance", "gpuledger_reader");
  const std::string err = (scratch_ / "stderr").string();
  auto report = [&] {
    const Proc out = run("SOURCE_DATE_EPOCH=" + std::to_string(kGenerated) + " " + gpuledger() +
                             " report --fleet-db '" + pg_->conninfo("finance") + "' --fleet-db-password-file " +
                             reader_pw + " --format csv --granularity hour --from " + report::format_rfc3339(kDay0) +
                             " --to " + report::format_rfc3339(kDay0 + 3 * 86400),
                         (" 2>" + err).c_str());
    EXPECT_EQ(out.status, 0) << slurp(err);
    return std::pair{out.out, slurp(err)};
  };
  // Every hour's but GPU-a's at 05:00 on day 1, which the late window left
  // stale: its windows are read, its body never looked at.
  const auto two = report();
  pg_->psql("ALTER ROLE finance CONNECTION LIMIT 1");
  const auto one = report();
  EXPECT_EQ(two, one);
  EXPECT_EQ(
      two.second,
      "gpuledger report: " +
          std::to_string(std::stoll(pg_->psql("SELECT count(*) FROM gpuledger.rollups WHERE period = 'hour' AND NOT "
                                              "(gpu_uuid = 'GPU-a' AND period_start = " +
                                              std::to_string(kDay0 + 86400 + 5 * 3600) + ")"))) +
          " roll-ups in the fleet database did not check out against their windows and were not read (the bill "
          "is the windows'; see gpuledger.rollups.refusal)\n" +
          kOverlap);
  EXPECT_EQ(two.first, csv_in_one_read(*admin_, kDay0, kDay0 + 3 * 86400, report::Granularity::kHour));
}

// The table, JSON and FOCUS: the bill id and the notes (refused roll-ups,
// overlaps) read on the second connection are the ones one connection reads.
TEST_F(FleetTwoConnections, EveryFormatsBillIdAndNotesReadAsideAreOneConnections) {
  ASSERT_NO_FATAL_FAILURE(ship());
  pg_->psql("UPDATE gpuledger.rollups SET body = '{\"start\": 1}' WHERE period = 'hour' AND gpu_uuid = 'GPU-b'");
  const std::string reader_pw = pg_->add_login("finance", "gpuledger_reader");
  const std::string err = (scratch_ / "stderr").string();
  auto report = [&](const std::string& args) {
    const Proc out = run("SOURCE_DATE_EPOCH=" + std::to_string(kGenerated) + " " + gpuledger() +
                             " report --fleet-db '" + pg_->conninfo("finance") + "' --fleet-db-password-file " +
                             reader_pw + " --from " + report::format_rfc3339(kDay0 + 22 * 3600 + 600) + " --to " +
                             report::format_rfc3339(kDay0 + 86400 + 5 * 3600 + 60) + " " + args,
                         (" 2>" + err).c_str());
    EXPECT_EQ(out.status, 0) << slurp(err);
    return std::pair{out.out, slurp(err)};
  };
  const std::vector<std::string> formats = {"--by team", "--format json --by namespace", "--format focus",
                                            "--format csv --csv-totals"};
  std::vector<std::pair<std::string, std::string>> two;
  for (const auto& f : formats) two.push_back(report(f));
  pg_->psql("ALTER ROLE finance CONNECTION LIMIT 1");
  for (size_t i = 0; i < formats.size(); ++i) {
    SCOPED_TRACE(formats[i]);
    EXPECT_EQ(two[i], report(formats[i]));
    EXPECT_NE(two[i].first.find("sha256:"), std::string::npos) << two[i].first;
    if (i != 1) {  // JSON of 7 hours charts in buckets under an hour: it reads windows, no roll-up
      EXPECT_NE(two[i].second.find(" roll-ups in the fleet database did not check out"), std::string::npos);
    }
    EXPECT_NE(two[i].second.find(kOverlap), std::string::npos) << two[i].second;
  }
}

// A JSON or HTML report's chart, summed by the server on the second
// connection while the first reads the rows at the coarsest roll-ups: the
// same bytes as one connection's, which sums it first. Where the server
// cannot sum it (the late window left GPU-a's day 1 stale), it is read apart
// at its period: the chart, the money and the bill id are one connection's
// (which then reads the rows at that period: their GPU-hours may be summed
// in another order), and so are the notes.
TEST_F(FleetTwoConnections, TheChartReadAsideIsOneConnectionsWhetherTheServerCanSumItOrNot) {
  ASSERT_NO_FATAL_FAILURE(ship());
  const std::string reader_pw = pg_->add_login("finance", "gpuledger_reader");
  const std::string err = (scratch_ / "stderr").string();
  auto report = [&](int64_t to, const std::string& format) {
    const Proc out =
        run("SOURCE_DATE_EPOCH=" + std::to_string(kGenerated) + " " + gpuledger() + " report --fleet-db '" +
                pg_->conninfo("finance") + "' --fleet-db-password-file " + reader_pw + " --by team --from " +
                report::format_rfc3339(kDay0) + " --to " + report::format_rfc3339(to) + " --format " + format,
            (" 2>" + err).c_str());
    EXPECT_EQ(out.status, 0) << slurp(err);
    return std::pair{out.out, slurp(err)};
  };
  const int64_t day = kDay0 + 86400, days = kDay0 + 2 * 86400;
  ASSERT_TRUE(fleet::read_chart_costs(*admin_, kDay0, day, {}, fleet::Period::kHour).has_value());
  ASSERT_FALSE(fleet::read_chart_costs(*admin_, kDay0, days, {}, fleet::Period::kHour).has_value());
  const auto json_day = report(day, "json"), html_day = report(day, "html"), json_days = report(days, "json");
  pg_->psql("ALTER ROLE finance CONNECTION LIMIT 1");
  EXPECT_EQ(json_day, report(day, "json"));
  EXPECT_EQ(html_day, report(day, "html"));
  const auto one = report(days, "json");
  EXPECT_EQ(json_days.second, one.second);
  EXPECT_NE(one.second.find(kOverlap), std::string::npos) << one.second;
  const auto a = nlohmann::json::parse(json_days.first), b = nlohmann::json::parse(one.first);
  EXPECT_EQ(a["bucket_seconds"], 3600);
  EXPECT_EQ(a["bucket_seconds"], b["bucket_seconds"]);
  EXPECT_EQ(a["cost_by_team_over_time"], b["cost_by_team_over_time"]);
  EXPECT_EQ(a["audit"]["bill_id"], b["audit"]["bill_id"]);
  EXPECT_EQ(a["total"]["cost_total_micros"], b["total"]["cost_total_micros"]);
  ASSERT_EQ(a["rows"].size(), b["rows"].size());
  for (size_t i = 0; i < a["rows"].size(); ++i)
    for (const char* cost : {"key", "cost_busy_micros", "cost_idle_micros", "cost_memory_micros"})
      EXPECT_EQ(a["rows"][i][cost], b["rows"][i][cost]) << i << " " << cost;
}

TEST_F(FleetTwoConnections, ASecondConnectionSeesTheFirstsSnapshotNotWhatCameAfter) {
  ASSERT_NO_FATAL_FAILURE(ship());
  const int64_t before = windows_in(*admin_);
  fleet::PgConnection first(pg_->conninfo(), pg_->admin_password_file());
  fleet::FleetSnapshot snapshot(first);
  fleet::FleetReadNotes notes;
  // Taken before the window below is stored; the second connection opened after it.
  const auto now = fleet_window(kDay0 + 2 * 86400 + 7200, "GPU-a");
  EXPECT_EQ(windows_in(first), before);
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  ASSERT_EQ(sink.ship({&now}), std::vector<Delivery>{Delivery::kStored});
  const auto second = fleet::SecondReader::open(snapshot, pg_->conninfo(), pg_->admin_password_file(), notes);
  ASSERT_NE(second, nullptr);
  int64_t read = 0;
  second->read(kDay0, kDay0 + 3 * 86400, {}, std::nullopt, [&](ledger::WindowRecord&&) { ++read; });
  EXPECT_EQ(read, before) << "the second connection reads the first's snapshot";
  EXPECT_EQ(windows_in(*admin_), before + 1) << "a connection of its own sees the new window";
}

TEST_F(FleetTwoConnections, NoSecondConnectionWhereTheRoleIsAtItsLimit) {
  const std::string pw = pg_->add_login("finance", "gpuledger_reader");
  pg_->psql("ALTER ROLE finance CONNECTION LIMIT 1");
  fleet::PgConnection first(pg_->conninfo("finance"), pw);
  fleet::FleetSnapshot snapshot(first);
  fleet::FleetReadNotes notes;
  EXPECT_EQ(fleet::SecondReader::open(snapshot, pg_->conninfo("finance"), pw, notes), nullptr);
  EXPECT_EQ(windows_in(first), 0) << "the first connection's snapshot still reads";
}

}  // namespace
}  // namespace gpuledger::testing
