// Fleet schema 11 (issue 30, the fleet read), against a real PostgreSQL
// server (pg_server.h): the window totals a report merges with the roll-ups,
// in key order, come from an index alone, on every month's partition, and a
// database migrated from 10 reads the same totals, windows and digest.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet/fleet_sink_postgres.h"
#include "fleet/fleet_sql.h"
#include "fleet_db_fixture.h"

namespace gpuledger::testing {
namespace {

using fleet::Period;

constexpr int64_t kDay1 = kFleetDay0 + 86400;

// The merge's read of the totals of whole periods, in key order: the reader's own statement.
std::string merge_read(fleet::PgConnection& db, const std::vector<std::string>& hours) {
  return fleet::merged_totals_sql(fleet::whole_periods(db, Period::kHour, hours, {}));
}

// The plan PostgreSQL runs for `sql` where its pages are all visible, with
// the ways that need no ordered index (a scan of the table, a bitmap, a
// sort) priced out: what is left is an index scan, with the heap or without.
std::string plan_of(fleet::PgConnection& db, const std::string& sql) {
  db.exec("VACUUM gpuledger.window_totals");
  db.exec("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off");
  const std::string plan = rows_of(db, "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, SUMMARY OFF) " + sql);
  db.exec("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort");
  return plan;
}

// What a report of day 1 reads: the windows digest, how many windows and their cost.
std::string day_one_read(fleet::PgConnection& db) {
  std::string digest;
  int64_t windows = 0, micros = 0;
  fleet::for_each_fleet_window(
      db, kDay1, kDay1 + 86400, {}, Period::kDay,
      [&](ledger::WindowRecord&& w) { ++windows, micros += w.cost_micros; }, &digest);
  return digest + " " + std::to_string(windows) + " " + std::to_string(micros);
}

TEST_F(FleetDb, SchemaElevenMergesTheTotalsOfWholePeriodsFromAnIndexAlone) {
  pg_->psql("CREATE DATABASE ten");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "ten"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 10), 10);
  const auto ws = two_gpus();
  fleet::FleetSinkPostgres sink(db, {"prod", "node-1"});
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<fleet::Delivery>(ws.size(), fleet::Delivery::kStored));
  std::vector<std::string> hours;
  for (int h = 0; h < 24; ++h) hours.push_back(std::to_string(kDay1 + h * 3600));
  // At 10 the read visits the heap for every row (the mutation this test would miss).
  EXPECT_EQ(plan_of(db, merge_read(db, hours)).find("Index Only Scan"), std::string::npos);
  const std::string totals_10 = rows_of(db, "SELECT * FROM gpuledger.window_totals ORDER BY 1, 2, 3, 4, 5");
  const std::string read_10 = day_one_read(db);
  int64_t day_one_micros = 0;
  for (const auto& w : ws) day_one_micros += w.start >= kDay1 && w.start < kDay1 + 86400 ? w.cost_micros : 0;
  ASSERT_EQ(read_10.substr(read_10.find(' ')), " 2880 " + std::to_string(day_one_micros));

  ASSERT_EQ(fleet::migrate(db, kFleetT0, 11), 11);
  // A partition made after the migration has the indexes too (the parent's).
  db.exec("SELECT gpuledger.create_partitions(" + std::to_string(kFleetT0 + 62 * 86400) + ")");
  EXPECT_EQ(rows_of(db, "SELECT count(*), count(*) FILTER (WHERE x.indnatts - x.indnkeyatts = 3 AND x.indnkeyatts = 5), "
                        "count(*) FILTER (WHERE x.indnatts = 2 AND x.indnkeyatts = 2) "
                        "FROM pg_inherits i JOIN pg_index x ON x.indrelid = i.inhrelid "
                        "WHERE i.inhparent = 'gpuledger.window_totals'::regclass"),
            rows_of(db, "SELECT 3 * n, n, n FROM (SELECT count(*) n FROM pg_inherits "
                        "WHERE inhparent = 'gpuledger.window_totals'::regclass) p"));
  EXPECT_GE(std::stoi(rows_of(db, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'gpuledger.window_totals'::regclass")), 3);
  const std::string plan = plan_of(db, merge_read(db, hours));
  EXPECT_NE(plan.find("Index Only Scan using window_totals_"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Heap Fetches: 0"), std::string::npos) << plan;
  // The same totals, the same windows and the same digest.
  EXPECT_EQ(rows_of(db, "SELECT * FROM gpuledger.window_totals ORDER BY 1, 2, 3, 4, 5"), totals_10);
  EXPECT_EQ(day_one_read(db), read_10);
}

}  // namespace
}  // namespace gpuledger::testing
