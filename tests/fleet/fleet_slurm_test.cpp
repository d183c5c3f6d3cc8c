// The fleet database carries a Slurm job's user and account (schema 5, issue
// 32): rows shipped before the migration read back with none and keep their
// digests; rows with them read back exactly, a report from the database
// groups by them to the micro-unit, and a roll-up whose accounts claim
// another Slurm account than their windows' is refused.
#include <gtest/gtest.h>

#include <map>

#include "fleet/fleet_reader.h"
#include "fleet/fleet_rollups.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/window_json.h"
#include "fleet_db_fixture.h"
#include "ledger/hourly_rollup.h"
#include "report/report.h"

namespace gpuledger::testing {
namespace {

// fleet_window's two pods as two Slurm jobs: alice's under physics, bob's under chemistry.
ledger::WindowRecord slurm_window(int64_t start, int64_t seed) {
  ledger::WindowRecord w = fleet_window(start, "GPU-a", seed);
  w.accounts[0].labels.slurm_user = "alice";
  w.accounts[0].labels.slurm_account = "physics";
  w.accounts[1].labels.slurm_user = "bob";
  w.accounts[1].labels.slurm_account = "chemistry";
  return w;
}

std::map<std::string, int64_t> bill(fleet::PgConnection& db, report::GroupBy by, std::optional<fleet::Period> coarsest) {
  report::ReportBuilder builder(kFleetT0, kFleetT0 + 86400, by);
  fleet::for_each_fleet_window(db, kFleetT0, kFleetT0 + 86400, {}, coarsest,
                               [&](ledger::WindowRecord&& w) { builder.add(w); });
  const auto r = builder.finish();
  std::map<std::string, int64_t> out;
  int64_t sum = 0;
  for (const auto& row : r.rows) sum += out[row.key] = row.cost_total_micros();
  EXPECT_EQ(sum, r.total.cost_total_micros());
  return out;
}

// A window's rows as a schema 4 agent inserted them: the account rows without
// the two Slurm columns, the digest it computed (which leaves them out when empty).
void insert_as_schema_4(fleet::PgConnection& db, const fleet::Origin& origin, const ledger::WindowRecord& w) {
  const fleet::WindowRows rows = fleet::to_rows(origin, w);
  auto insert = [&](const std::string& table, std::vector<std::string> columns, std::vector<fleet::PgParam> row) {
    columns.insert(columns.begin(), {"cluster", "node", "gpu_uuid", "start_time"});
    row.resize(columns.size());
    std::string names, values;
    for (size_t i = 0; i < columns.size(); ++i) {
      names += (i ? "," : "") + columns[i];
      values += (i ? ",$" : "$") + std::to_string(i + 1);
    }
    db.query("INSERT INTO gpuledger." + table + "(" + names + ") VALUES (" + values + ")", row);
  };
  insert("windows", fleet::kWindowColumns, rows.window);
  std::vector<std::string> account_columns = fleet::kAccountColumns;
  account_columns.resize(account_columns.size() - 2);  // no slurm_user, slurm_account
  for (const auto& r : rows.accounts) insert("accounts", account_columns, r);
  for (const auto& r : rows.charges) insert("charges", fleet::kChargeColumns, r);
  for (const auto& r : rows.energy_charges) insert("energy_charges", fleet::kEnergyChargeColumns, r);
}

TEST_F(FleetDb, AnUpgradeToSchemaFiveKeepsTheOldRowsAndTheirDigests) {
  pg_->psql("CREATE DATABASE upgrade");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "upgrade"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 4), 4);
  const ledger::WindowRecord old = fleet_window(kFleetT0, "GPU-a");
  insert_as_schema_4(db, {"prod", "node-1"}, old);
  ASSERT_EQ(fleet::migrate(db, kFleetT0), fleet::kFleetSchemaVersion);
  // Read back as it was, no Slurm user or account; resent by a schema 5 agent: the same digest, a duplicate.
  std::vector<ledger::WindowRecord> back;
  fleet::for_each_fleet_window(db, kFleetT0, kFleetT0 + 3600, {}, [&](ledger::WindowRecord&& w) { back.push_back(w); });
  ASSERT_EQ(back.size(), 1u);
  back[0].node.clear();
  EXPECT_EQ(back[0], old);
  fleet::FleetSinkPostgres again(db, {"prod", "node-1"});
  EXPECT_EQ(again.ship({&old}), std::vector<fleet::Delivery>{fleet::Delivery::kDuplicate});
  // The Slurm names are in the digest when there are some.
  EXPECT_NE(fleet::to_rows({"prod", "node-1"}, slurm_window(kFleetT0, 0)).digest,
            fleet::to_rows({"prod", "node-1"}, old).digest);
}

TEST_F(FleetDb, SlurmUsersAndAccountsReadBackAndTheFleetBillGroupsByThem) {
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  std::vector<ledger::WindowRecord> ws;
  for (int i = 0; i < 60; ++i) ws.push_back(slurm_window(kFleetT0 + 60 * i, i));  // one whole hour
  store.insert_windows(ws);
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  EXPECT_EQ(sink.ship(pointers(ws)), std::vector<fleet::Delivery>(60, fleet::Delivery::kStored));
  std::vector<ledger::WindowRecord> back;
  fleet::for_each_fleet_window(*admin_, kFleetT0, kFleetT0 + 60, {}, [&](ledger::WindowRecord&& w) { back.push_back(w); });
  ASSERT_EQ(back.size(), 1u);
  back[0].node.clear();
  EXPECT_EQ(back[0], ws[0]);

  // 60 windows of 60,000 micro-units plus seeds 0..59 (1,770), all in alice's busy part.
  const std::map<std::string, int64_t> by_account = {{"physics", 60 * 39'000 + 1'770}, {"chemistry", 60 * 21'000}};
  const std::map<std::string, int64_t> by_user = {{"alice", 60 * 39'000 + 1'770}, {"bob", 60 * 21'000}};
  EXPECT_EQ(bill(*admin_, report::GroupBy::kAccount, std::nullopt), by_account);
  EXPECT_EQ(bill(*admin_, report::GroupBy::kUser, std::nullopt), by_user);
  EXPECT_EQ(bill(*admin_, report::GroupBy::kAccount, std::nullopt).at("physics") +
                bill(*admin_, report::GroupBy::kAccount, std::nullopt).at("chemistry"),
            60 * 60'000 + 1'770);

  // The hour's roll-up carries them: verified, and the bill read from it is the same.
  auto rollups = fleet::build_rollups(store, {"prod", "node-1"}, fleet::Period::kHour, kFleetT0 - kFleetT0 % 3600);
  ASSERT_EQ(rollups.size(), 1u);
  EXPECT_EQ(fleet::window_from_json(fleet::window_to_json(rollups[0].window)), rollups[0].window);
  sink.ship_rollups(rollups);
  EXPECT_EQ(pg_->psql("SELECT verified, refusal IS NULL FROM gpuledger.rollups"), "t|t\n");
  EXPECT_EQ(bill(*admin_, report::GroupBy::kAccount, fleet::Period::kHour), by_account);

  // Attack: the same roll-up claiming bob's job for another account. Refused, and not read.
  pg_->psql("DELETE FROM gpuledger.rollups");
  rollups[0].window.accounts[1].labels.slurm_account = "physics";
  sink.ship_rollups(rollups);
  EXPECT_EQ(pg_->psql("SELECT verified, refusal FROM gpuledger.rollups"),
            "f|its accounts' Slurm users or accounts are not its windows'\n");
  EXPECT_EQ(bill(*admin_, report::GroupBy::kAccount, fleet::Period::kHour), by_account);
}

}  // namespace
}  // namespace gpuledger::testing
