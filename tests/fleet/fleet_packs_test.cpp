// Packed hours against a real PostgreSQL server (schema 17, issue 30 item 4):
// `fleet-db pack` moves the windows of each GPU-hour whose hour roll-up the
// database verified into one compressed row; every read of the fleet bill
// (from windows alone, from roll-ups, ragged ranges, the views, the roll-up
// check) gives what it gave before, to the micro-unit and with the same
// windows' digest; a packed hour takes no window any more (a resend would
// count twice; another node's window over it would hide from the overlap
// probes); only the owner and the maintainer's role (schema 18) pack, and
// that role can do nothing else; prune drops a month's packs with it.
#include <gtest/gtest.h>

#include "cli_process.h"
#include "common/error.h"
#include "fleet/fleet_packs.h"
#include "fleet/fleet_periods.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet_db_fixture.h"

namespace gpuledger::testing {
namespace {

using fleet::Period;

// What a reader sees of the fleet, every way it reads it.
struct Seen {
  std::vector<Read> reads;
  std::string views;   // the schema 7 views, summed
  std::string checks;  // every roll-up checked again by the database
};

const int64_t kFrom = kFleetDay0 + 22 * 3600, kTo = kFleetDay0 + 2 * 86400 + 5400;  // two_gpus()' span

Seen seen(fleet::PgConnection& db) {
  Seen s;
  const int64_t a = kFrom + 3 * 3600 + 60, b = kFrom + 20 * 3600 + 120;  // ragged, inside packed hours
  for (const auto& [from, to, coarsest] : std::vector<std::tuple<int64_t, int64_t, std::optional<Period>>>{
           {kFrom, kTo, std::nullopt},
           {kFrom, kTo, Period::kHour},
           {kFrom, kTo, Period::kDay},
           {a, b, std::nullopt},
           {a, b, Period::kDay},
           {kFleetDay0 + 86400 + 5 * 3600, kFleetDay0 + 86400 + 6 * 3600, Period::kHour},
           // after the packed windows' end (rows alone), then across it
           {kFleetDay0 + 2 * 86400 + 1800, kTo, Period::kHour},
           {kFleetDay0 + 86400 + 23 * 3600 + 1800, kTo, std::nullopt}})
    s.reads.push_back(read(db, from, to, coarsest));
  s.views =
      rows_of(db,
              "SELECT (SELECT count(*) || ' ' || sum(busy_seconds::numeric) || ' ' || string_agg(DISTINCT team, ',') "
              "FROM gpuledger.accounts), (SELECT count(*) || ' ' || sum(micros) FROM gpuledger.charges), "
              "(SELECT count(*) || ' ' || sum(millijoules) FROM gpuledger.energy_charges)");
  s.checks = rows_of(db,
                     "SELECT r.period, count(*), count(gpuledger.check_rollup(r)), count(gpuledger.check_rollup_19(r)) "
                     "FROM gpuledger.rollups r "
                     "GROUP BY 1 ORDER BY 1");
  return s;
}

void expect_same(const Seen& after, const Seen& before) {
  ASSERT_EQ(after.reads.size(), before.reads.size());
  for (size_t i = 0; i < before.reads.size(); ++i) {
    SCOPED_TRACE("read " + std::to_string(i));
    EXPECT_EQ(after.reads[i].records, before.reads[i].records);
    expect_same_bill(after.reads[i], before.reads[i]);
  }
  EXPECT_EQ(after.views, before.views);
  EXPECT_EQ(after.checks, before.checks);
}

TEST_F(FleetDb, PackMovesVerifiedHoursIntoOneRowEachAndEveryReadBillsTheSame) {
  ASSERT_NO_FATAL_FAILURE(ship_two_gpus_and_a_late_window(*pg_, *admin_, scratch_));
  const Seen before = seen(*admin_);
  EXPECT_EQ(before.checks, "day|4|1|1\nhour|54|1|1\n") << "GPU-a's hour and day of the late window are stale";
  const std::string json_before = rows_of(*admin_, "SELECT * FROM gpuledger.stored_windows ORDER BY 1, 2, 3, 4");
  const int64_t windows = count("windows");
  ASSERT_EQ(windows, static_cast<int64_t>(two_gpus().size()) + 1);

  // Hours before day 2 00:00 only; GPU-a's hour of the late window keeps its rows (its roll-up is not current).
  const fleet::PackResult r = fleet::pack_before(*admin_, kFleetDay0 + 2 * 86400);
  EXPECT_EQ(r.gpu_hours, 2 * 26 - 1);
  EXPECT_EQ(r.windows, (2 * 26 - 1) * 60);  // 60 a GPU-hour
  EXPECT_EQ(r.left, 1);
  EXPECT_EQ(count("window_packs"), r.gpu_hours);
  EXPECT_EQ(count("windows"), windows - r.windows);
  EXPECT_EQ(
      count("windows WHERE gpu_uuid = 'GPU-a' AND start_time >= " + std::to_string(kFleetDay0 + 86400 + 5 * 3600) +
            " AND start_time < " + std::to_string(kFleetDay0 + 86400 + 6 * 3600)),
      61);
  // A packed hour's parts are read from its pack: its rows of window_parts are gone, the others kept.
  EXPECT_EQ(count("window_parts x WHERE EXISTS (SELECT FROM gpuledger.window_packs p WHERE p.cluster = x.cluster "
                  "AND p.node = x.node AND p.gpu_uuid = x.gpu_uuid AND p.hour_start = x.hour_start)"),
            0);
  EXPECT_GT(count("window_parts"), 0);
  // Every window as it was stored, every column, in packs or rows.
  EXPECT_EQ(rows_of(*admin_, "SELECT * FROM gpuledger.stored_windows ORDER BY 1, 2, 3, 4"), json_before);
  expect_same(seen(*admin_), before);

  // Repeatable: nothing more to pack until the stale hour's roll-up is current.
  const fleet::PackResult again = fleet::pack_before(*admin_, kFleetDay0 + 2 * 86400);
  EXPECT_EQ(again.windows, 0);
  EXPECT_EQ(again.left, 1);
  // The rest, up to what is over (day 2 01:00 has 30 minutes: its roll-up is of them).
  const fleet::PackResult rest = fleet::pack_before(*admin_, kTo + 7200);
  EXPECT_EQ(rest.gpu_hours, 2);  // day 2 00:00; 01:00 is half an hour, with no roll-up
  EXPECT_EQ(rest.left, 3);
  EXPECT_EQ(count("windows"), 61 + 2 * 30);
  expect_same(seen(*admin_), before);
}

TEST_F(FleetDb, AttackAWindowIntoAPackedHourIsRefusedAndNothingCountsTwice) {
  ASSERT_NO_FATAL_FAILURE(ship_two_gpus_and_a_late_window(*pg_, *admin_, scratch_));
  fleet::pack_before(*admin_, kFleetDay0 + 2 * 86400);
  const std::string totals = rows_of(*admin_, "SELECT * FROM gpuledger.window_totals ORDER BY 1, 2, 3, 4, 5");
  const Read bill = read(*admin_, kFrom, kTo, Period::kDay);

  // The same window sent again (an agent that died before it marked it shipped): refused, not counted twice.
  const auto resent = two_gpus()[2 * 90];  // GPU-a at day 0 23:30
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  try {
    sink.ship({&resent});
    ADD_FAILURE() << "a packed window was stored again";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("starts before the end of its GPU's packed windows"), std::string::npos)
        << e.what();
  }
  // Another node's windows over a packed window of GPU-b (the overlap probes read rows only), as its own role:
  // one inside, one reaching into the hour from the one before (no pack there), both refused.
  const std::string role = fleet::add_node_role(*admin_, "node-x", std::string("prod"));
  fleet::PgConnection as_x(pg_->conninfo(role), pg_->set_password(role));
  fleet::FleetSinkPostgres other(as_x, {"prod", "node-x"});
  auto inside = fleet_window(kFleetDay0 + 86400 + 3 * 3600 + 600, "GPU-b", 3);
  auto reaching = fleet_window(kFrom - 600, "GPU-b", 4);
  reaching.end = kFrom + 120;
  for (const auto* w : {&inside, &reaching}) {
    try {
      other.ship({w});
      ADD_FAILURE() << "stored over a packed window: " << w->start;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("starts before the end of its GPU's packed windows"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(rows_of(*admin_, "SELECT * FROM gpuledger.window_totals ORDER BY 1, 2, 3, 4, 5"), totals);
  expect_same_bill(read(*admin_, kFrom, kTo, Period::kDay), bill);
  EXPECT_EQ(count("overlaps WHERE node = 'node-x'"), 0);

  // A window after the packed hours is taken as ever.
  const auto later = fleet_window(kTo + 60, "GPU-b", 5);
  EXPECT_EQ(other.ship({&later}), std::vector<fleet::Delivery>{fleet::Delivery::kStored});

  // Only the owner packs; agents read no pack, readers read them.
  EXPECT_THROW(as_x.query("SELECT gpuledger.pack_hours(0, 9999999999)"), Error);
  EXPECT_THROW(as_x.query("SELECT count(*) FROM gpuledger.window_packs"), Error);
  EXPECT_THROW(as_x.query("SELECT count(*) FROM gpuledger.stored_windows"), Error);
  fleet::PgConnection finance(pg_->conninfo("finance"), pg_->add_login("finance", "gpuledger_reader"));
  EXPECT_EQ(finance.query("SELECT count(*) FROM gpuledger.stored_windows").i64(0, 0),
            static_cast<int64_t>(two_gpus().size()) + 2);
  EXPECT_THROW(finance.query("SELECT gpuledger.pack_hours(0, 9999999999)"), Error);
  expect_same_bill(read(finance, kFrom, kTo, std::nullopt), bill);  // a reader's report reads the packs
}

// The command: any time a report takes; what it did in one line.
TEST_F(FleetDb, PackTakesATimeAndSaysWhatItPacked) {
  ASSERT_NO_FATAL_FAILURE(ship_two_gpus_and_a_late_window(*pg_, *admin_, scratch_));
  const std::string cmd = gpuledger() + " fleet-db pack --fleet-db '" + pg_->conninfo() +
                          "' --fleet-db-password-file " + pg_->admin_password_file() + " --before ";
  Proc p = run(cmd + "2027-01-16T01:30:00Z");  // day 0 22:00 to day 1 01:00: 3 hours of 2 GPUs
  EXPECT_EQ(p.status, 0) << p.out;
  EXPECT_EQ(p.out,
            "packed 360 windows of 6 GPU-hours; 0 GPU-hours before 2027-01-16T01:00:00Z keep their windows in rows "
            "(no verified roll-up of them yet)\n");
  p = run(cmd + std::to_string(kTo));  // again: GPU-a's stale hour, and day 2 01:00 (half an hour) not before
  EXPECT_EQ(p.status, 0) << p.out;
  EXPECT_EQ(p.out,
            "packed 2820 windows of 47 GPU-hours; 1 GPU-hours before 2027-01-17T01:00:00Z keep their windows in rows "
            "(no verified roll-up of them yet)\n");
  p = run(cmd + "yesterday-ish");
  EXPECT_EQ(p.status, 1);
  EXPECT_EQ(p.out.find('\n'), p.out.size() - 1) << "one sentence: " << p.out;
}

// A scheduled job's credential (schema 18): a login in gpuledger_maintainer
// packs through the command what the owner would, and can do nothing else:
// it reads no window, total, roll-up or pack (no cost, name or body), writes
// nothing, prunes nothing, creates nothing. An agent cannot plan a pack.
TEST_F(FleetDb, AttackTheMaintainersRolePacksAsTheOwnerWouldAndCanDoNothingElse) {
  ASSERT_NO_FATAL_FAILURE(ship_two_gpus_and_a_late_window(*pg_, *admin_, scratch_));
  const Seen before = seen(*admin_);
  const std::string pw = pg_->add_login("nightly", "gpuledger_maintainer");
  Proc p = run(gpuledger() + " fleet-db pack --fleet-db '" + pg_->conninfo("nightly") + "' --fleet-db-password-file " +
               pw + " --before 2027-01-17");
  EXPECT_EQ(p.status, 0) << p.out;
  EXPECT_EQ(p.out,
            "packed 3060 windows of 51 GPU-hours; 1 GPU-hours before 2027-01-17T00:00:00Z keep their windows in rows "
            "(no verified roll-up of them yet)\n");
  EXPECT_EQ(count("window_packs"), 51);
  expect_same(seen(*admin_), before);

  fleet::PgConnection nightly(pg_->conninfo("nightly"), pw);
  // Hours, how many GPU-hours in rows and how many of them to pack: all it reads. GPU-a's stale
  // hour and the last half hour have no verified, current roll-up (the command does not pack them again).
  EXPECT_EQ(rows_of(nightly, "SELECT * FROM gpuledger.unpacked_hours(0, 9999999999)"),
            std::to_string(kFleetDay0 + 86400 + 5 * 3600) + "|1|0\n" + std::to_string(kFleetDay0 + 2 * 86400) +
                "|2|2\n" + std::to_string(kFleetDay0 + 2 * 86400 + 3600) + "|2|0\n");
  const std::string hour = std::to_string(kFleetDay0 + 2 * 86400);
  for (const std::string& sql : std::vector<std::string>{
           "SELECT count(*) FROM gpuledger.windows", "SELECT count(*) FROM gpuledger.windows_2027_01",
           "SELECT count(*) FROM gpuledger.stored_windows", "SELECT count(*) FROM gpuledger.window_packs",
           "SELECT count(*) FROM gpuledger.window_totals", "SELECT count(*) FROM gpuledger.window_parts",
           "SELECT count(*) FROM gpuledger.rollups", "SELECT count(*) FROM gpuledger.accounts",
           "SELECT count(*) FROM gpuledger.charges", "SELECT count(*) FROM gpuledger.node_roles",
           "SELECT count(*) FROM gpuledger.packed_until", "DELETE FROM gpuledger.window_packs",
           "DELETE FROM gpuledger.windows", "UPDATE gpuledger.packed_until SET end_time = 0",
           "SELECT gpuledger.prune_month(" + std::to_string(kFleetDay0) + ")",
           "SELECT gpuledger.create_month(4102444800)", "SELECT gpuledger.create_packs_partition(4102444800)",
           "SELECT gpuledger.check_rollup(r) FROM gpuledger.rollups r",
           "SELECT gpuledger.check_rollup_19(r) FROM gpuledger.rollups r"}) {
    const std::string said = refusal(nightly, sql);
    EXPECT_EQ(fleet::sqlstate_of(said), "42501") << sql << ": " << said;
  }
  fleet::FleetSinkPostgres sink(nightly, {"prod", "node-1"});
  const auto late = fleet_window(kTo + 60, "GPU-b", 5);
  EXPECT_THROW(sink.ship({&late}), Error) << "a maintainer ships no window";
  EXPECT_THROW(fleet::migrate(nightly, kFleetT0), Error);
  // What it may call packs verified hours only, as the owner's command does: the stale hour stays in rows.
  const std::string stale = std::to_string(kFleetDay0 + 86400 + 5 * 3600);
  EXPECT_EQ(rows_of(nightly, "SELECT * FROM gpuledger.pack_hours(" + stale + ", " + stale + " + 3600)"), "0|0\n");
  // One hour a call: no caller holds the agents' inserts for a month's pack.
  EXPECT_EQ(fleet::sqlstate_of(refusal(nightly, "SELECT gpuledger.pack_hours(0, " + hour + ")")), "22023");
  EXPECT_EQ(fleet::sqlstate_of(refusal(*admin_, "SELECT gpuledger.pack_hours(0, " + hour + ")")), "22023");
  EXPECT_EQ(count("window_packs"), 51);
  expect_same(seen(*admin_), before);

  const std::string role = fleet::add_node_role(*admin_, "node-x", std::string("prod"));
  fleet::PgConnection as_x(pg_->conninfo(role), pg_->set_password(role));
  EXPECT_EQ(fleet::sqlstate_of(refusal(as_x, "SELECT * FROM gpuledger.unpacked_hours(0, 9999999999)")), "42501");
}

TEST_F(FleetDb, PruneDropsAMonthsPacksWithItsWindows) {
  ASSERT_NO_FATAL_FAILURE(ship_two_gpus_and_a_late_window(*pg_, *admin_, scratch_));
  fleet::pack_before(*admin_, kFleetDay0 + 2 * 86400);
  ASSERT_GT(count("window_packs"), 0);
  const int64_t packs = admin_
                            ->query(
                                "SELECT count(*) FROM pg_inherits WHERE inhparent = "
                                "'gpuledger.window_packs'::regclass")
                            .i64(0, 0);
  EXPECT_EQ(packs, admin_
                       ->query("SELECT count(*) FROM pg_inherits WHERE inhparent = "
                               "'gpuledger.windows'::regclass")
                       .i64(0, 0))
      << "a month's packs partition with its windows'";
  // January 2027 has no verified month roll-up: kept, packs and all.
  EXPECT_EQ(admin_->query("SELECT gpuledger.prune_month($1)", {std::to_string(kFleetDay0 - 14 * 86400)}).text(0, 0),
            admin_->query("SELECT gpuledger.prune_month_16($1)", {std::to_string(kFleetDay0 - 14 * 86400)}).text(0, 0));
  EXPECT_GT(count("window_packs"), 0);
  // Its roll-ups all current and verified (as the owner, for the test), the month goes with its packs.
  admin_->exec(
      "DELETE FROM gpuledger.window_totals t WHERE NOT EXISTS (SELECT FROM gpuledger.rollups r WHERE "
      "r.period = t.period AND r.cluster = t.cluster AND r.node = t.node AND r.gpu_uuid = t.gpu_uuid AND "
      "r.period_start = t.period_start AND r.windows = t.windows AND r.cost_micros = t.cost_micros AND "
      "r.digests = t.digests AND r.verified)");
  EXPECT_TRUE(admin_->query("SELECT gpuledger.prune_month($1)", {std::to_string(kFleetDay0 - 14 * 86400)}).null(0, 0));
  EXPECT_EQ(count("window_packs"), 0);
  EXPECT_EQ(
      admin_->query("SELECT count(*) FROM pg_inherits WHERE inhparent = 'gpuledger.window_packs'::regclass").i64(0, 0),
      packs - 1);
}

}  // namespace
}  // namespace gpuledger::testing
