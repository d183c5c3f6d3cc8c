// Fleet schema 8 (issue 30, ingest): count_windows sums a statement's windows
// by hour first, check_rollup takes each part's own fields only. The same
// answers as schema 7's, against a real PostgreSQL server (pg_server.h): every
// roll-up keeps the verdict schema 7 gave it (true ones and forged ones of
// every reason), and the window totals are the windows' sums after more
// windows come in.
#include <gtest/gtest.h>

#include "fleet/fleet_rollups.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet_db_fixture.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;

TEST_F(FleetDb, SchemaEightGivesEveryRollUpTheVerdictAndEveryPeriodTheTotalsOfSchemaSeven) {
  pg_->psql("CREATE DATABASE seven");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "seven"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 7), 7);
  const fleet::Origin origin{"prod", "node-1"};
  fleet::FleetSinkPostgres sink(db, origin);
  const int64_t day1 = kFleetDay0 + 86400, relabelled = day1 + 6 * 3600;
  auto ws = two_gpus();
  for (auto& w : ws)  // GPU-a's pod-b moves to another team half way through 06:00
    if (w.slot.uuid == "GPU-a" && w.start >= relabelled + 1800 && w.start < relabelled + 3600)
      w.accounts[1].labels.team = "speech";
  ledger::Store store((scratch_ / "ledger.db").string());
  store.insert_windows(ws);
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  // Day 1's hours: GPU-a's true (06:00 has none: its pod was relabelled),
  // GPU-b's true but for 01:00 to 04:00, forged each a way.
  for (int h = 0; h < 24; ++h) {
    auto rollups = fleet::build_rollups(store, origin, Period::kHour, day1 + h * 3600);
    for (auto& r : rollups) {
      if (r.window.slot.uuid != "GPU-b") continue;
      auto& w = r.window;
      if (h == 1) w.charges[0].micros += 1000, w.charges[2].micros -= 1000;  // money moved between pods
      if (h == 2) w.accounts[0].labels.team = "forged";
      if (h == 3) w.accounts[0].labels.slurm_user = "mallory";
      if (h == 4) w.accounts.push_back(w.accounts[0]);  // an account named twice
    }
    sink.ship_rollups(rollups);
  }
  // GPU-a's 06:00 merged anyway: one set of labels for a pod that had two.
  std::vector<ledger::WindowRecord> six;
  for (const auto& w : ws)
    if (w.slot.uuid == "GPU-a" && w.start >= relabelled && w.start < relabelled + 3600) six.push_back(w);
  fleet::Rollup merged_anyway{Period::kHour, relabelled, ledger::merge_windows(six), 60, 0};
  for (const auto& w : six) merged_anyway.digests += fleet::digest_part(fleet::to_window_row(origin, w).digest);
  EXPECT_EQ(sink.ship_rollups({merged_anyway}), std::vector<Delivery>{Delivery::kUnverified});
  sink.ship_rollups(fleet::build_rollups(store, origin, Period::kDay, day1));  // GPU-b's day (GPU-a's relabelled)
  const std::string verdicts = "SELECT coalesce(refusal, 'verified'), count(*) FROM gpuledger.rollups GROUP BY 1 ORDER BY 1";
  EXPECT_EQ(rows_of(db, verdicts),
            "an account's labels changed within the period (one merged account would bill it all to its last team)|1\n"
            "its accounts are not its windows'|2\n"
            "its accounts' Slurm users or accounts are not its windows'|1\n"
            "its charges or energy are not its windows'|1\n"
            "verified|44\n");  // 23 hours of GPU-a, 20 of GPU-b, its day
  const std::string totals = "SELECT * FROM gpuledger.window_totals ORDER BY 1, 2, 3, 4, 5";
  const std::string totals_7 = rows_of(db, totals);

  ASSERT_EQ(fleet::migrate(db, kFleetT0), 8);
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.rollups r WHERE gpuledger.check_rollup(r) IS DISTINCT FROM "
                        "r.refusal"),
            "0\n");
  EXPECT_EQ(rows_of(db, totals), totals_7);
  // Another node's windows, and late ones of this node into hours it has:
  // the totals are still the windows' counts and sums, hour, day and month.
  fleet::FleetSinkPostgres other(db, {"prod", "node-2"});
  ASSERT_EQ(other.ship(pointers(two_gpus())), std::vector<Delivery>(two_gpus().size(), Delivery::kStored));
  std::vector<ledger::WindowRecord> late;
  for (int64_t t = day1 + 30; t < day1 + 86400; t += 3600) late.push_back(fleet_window(t, "GPU-b", t % 7));
  ASSERT_EQ(sink.ship(pointers(late)), std::vector<Delivery>(late.size(), Delivery::kStored));
  EXPECT_EQ(rows_of(db, "SELECT p.period, p.period_start, w.cluster, w.node, w.gpu_uuid, count(*), sum(w.cost_micros), "
                        "sum(gpuledger.digest_part(w.digest)) FROM gpuledger.windows w "
                        "CROSS JOIN LATERAL gpuledger.periods_of(w.start_time) p GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"),
            rows_of(db, totals));
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.window_totals WHERE node = 'node-2'"), rows_of(db,
            "SELECT count(DISTINCT (p.period, p.period_start, w.gpu_uuid)) FROM gpuledger.windows w "
            "CROSS JOIN LATERAL gpuledger.periods_of(w.start_time) p WHERE w.node = 'node-2'"));
}

}  // namespace
}  // namespace gpuledger::testing
