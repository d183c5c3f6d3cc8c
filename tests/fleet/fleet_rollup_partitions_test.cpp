// Fleet schema 12 (issue 30, the fleet read), against a real PostgreSQL
// server (pg_server.h): each month's roll-ups lie in three partitions, one a
// period, those migrated from 11 as those made after; a read of days touches
// the days' partition alone; what each roll-up was (verdict, refusal, the
// charges kept from it) and what a report reads are the same across the
// migration; a roll-up shipped after it is still checked by the database.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet/fleet_rollups.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/fleet_sql.h"
#include "fleet_db_fixture.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;

constexpr int64_t kDay1 = kFleetDay0 + 86400;

// What a report of day 1 read at its day roll-ups gives: the windows digest,
// the records it was given (a day roll-up is one), their windows' cost, and the refused roll-ups.
std::string day_one_read(fleet::PgConnection& db) {
  std::string digest;
  fleet::FleetReadNotes notes;
  int64_t records = 0, micros = 0;
  fleet::for_each_fleet_window(
      db, kDay1, kDay1 + 86400, {}, Period::kDay, [&](ledger::WindowRecord&& w) { ++records, micros += w.cost_micros; },
      &digest, &notes);
  return digest + " " + std::to_string(records) + " " + std::to_string(micros) + " " +
         std::to_string(notes.refused_rollups);
}

// Every roll-up as stored (shipped_at and the verdict included), and the charges kept from them.
std::string stored_rollups(fleet::PgConnection& db) {
  return rows_of(db, "SELECT * FROM gpuledger.rollups ORDER BY 1, 2, 3, 4, 5, 6") +
         rows_of(db, "SELECT * FROM gpuledger.rollup_charges ORDER BY 1, 2, 3, 4, 5, 6, 7");
}

// How the roll-ups of each month are laid out: month partition, its kind, its partitions by period.
std::string layout(fleet::PgConnection& db) {
  return rows_of(db,
                 "SELECT m.relname, m.relkind, string_agg(p.relname || ' ' || pg_get_expr(p.relpartbound, p.oid), ', ' "
                 "ORDER BY p.relname) FROM pg_inherits i JOIN pg_class m ON m.oid = i.inhrelid "
                 "LEFT JOIN pg_inherits j ON j.inhparent = m.oid LEFT JOIN pg_class p ON p.oid = j.inhrelid "
                 "WHERE i.inhparent = 'gpuledger.rollups'::regclass GROUP BY 1, 2 ORDER BY 1");
}

std::string split(const std::string& month) {
  return "rollups_" + month + "|p|rollups_" + month + "_day FOR VALUES IN ('day'), rollups_" + month +
         "_hour FOR VALUES IN ('hour'), rollups_" + month + "_month FOR VALUES IN ('month')\n";
}

TEST_F(FleetDb, SchemaTwelveKeepsEachMonthsRollUpsInAPartitionAPeriod) {
  pg_->psql("CREATE DATABASE eleven");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "eleven"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 11), 11);
  const fleet::Origin origin{"prod", "node-1"};
  ledger::Store store((scratch_ / "ledger.db").string());
  const auto ws = two_gpus();
  store.insert_windows(ws);
  {
    fleet::FleetSinkPostgres sink(db, origin);
    ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
    fleet::RollupMemo memo(store, origin);
    for (int64_t h = kDay1; h < kDay1 + 86400; h += 3600)
      ASSERT_EQ(sink.ship_rollups(fleet::build_rollups(store, origin, Period::kHour, h, &memo)),
                std::vector<Delivery>(2, Delivery::kStored));
    auto days = fleet::build_rollups(store, origin, Period::kDay, kDay1, &memo);
    ASSERT_EQ(sink.ship_rollups(days), std::vector<Delivery>(2, Delivery::kStored));
    days[0].windows += 1;  // names windows the database does not hold: kept, refused
    ASSERT_EQ(sink.ship_rollups({days[0]}), std::vector<Delivery>{Delivery::kUnverified});
  }
  EXPECT_EQ(layout(db), "rollups_2027_01|r|NULL\nrollups_2027_02|r|NULL\n");
  const std::string stored_11 = stored_rollups(db), read_11 = day_one_read(db);
  int64_t day_one_micros = 0;
  for (const auto& w : ws) day_one_micros += w.start >= kDay1 && w.start < kDay1 + 86400 ? w.cost_micros : 0;
  ASSERT_EQ(read_11.substr(read_11.find(' ')), " 2 " + std::to_string(day_one_micros) + " 1");

  ASSERT_EQ(fleet::migrate(db, kFleetT0, 12), 12);
  // Every month's roll-ups in three partitions, and each roll-up in its period's.
  EXPECT_EQ(layout(db), split("2027_01") + split("2027_02"));
  EXPECT_EQ(rows_of(db, "SELECT tableoid::regclass, period, count(*) FROM gpuledger.rollups GROUP BY 1, 2 ORDER BY 2"),
            "gpuledger.rollups_2027_01_day|day|3\ngpuledger.rollups_2027_01_hour|hour|48\n");
  EXPECT_EQ(stored_rollups(db), stored_11) << "the same roll-ups, verdicts and kept charges";
  EXPECT_EQ(day_one_read(db), read_11) << "the same read of the same roll-ups";
  // A month made after the migration is split too.
  db.exec("SELECT gpuledger.create_partitions(" + std::to_string(kFleetT0 + 62 * 86400) + ")");
  EXPECT_EQ(layout(db), split("2027_01") + split("2027_02") + split("2027_03"));
  // A read of days touches the days' partition alone.
  const std::string plan = rows_of(
      db, "EXPLAIN (COSTS OFF) " +
              fleet::merged_rollups_sql(fleet::whole_periods(db, Period::kDay, {std::to_string(kDay1)}, {})));
  EXPECT_NE(plan.find("rollups_2027_01_day"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("_hour"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("_month"), std::string::npos) << plan;
  // Shipped after it: still checked, its charges (one row an account, two) still kept.
  fleet::FleetSinkPostgres sink(db, origin);
  fleet::RollupMemo memo(store, origin);
  auto late = fleet::build_rollups(store, origin, Period::kHour, kDay1 + 86400, &memo);
  ASSERT_EQ(late.size(), 2u);
  late[1].windows += 1;
  EXPECT_EQ(sink.ship_rollups(late), (std::vector<Delivery>{Delivery::kStored, Delivery::kUnverified}));
  EXPECT_EQ(rows_of(db, "SELECT r.tableoid::regclass, r.verified, count(c.*) FROM gpuledger.rollups r "
                        "LEFT JOIN gpuledger.rollup_charges c USING (period, cluster, node, gpu_uuid, period_start, windows) "
                        "WHERE r.period_start = " + std::to_string(kDay1 + 86400) + " GROUP BY 1, 2 ORDER BY 2"),
            "gpuledger.rollups_2027_01_hour|f|0\ngpuledger.rollups_2027_01_hour|t|2\n");
}

}  // namespace
}  // namespace gpuledger::testing
