// Energy through the ledger, end to end: observations with energy readings ->
// accountant -> store (schema 2, and a schema 1 store migrated) -> /metrics
// -> every report format. Hand computation (per 60 s window):
//   GPU-shared: NVML counter +300 J/s -> 18'000'000 mJ, source nvml; device
//               busy 0.6 -> busy 10'800'000 split 3:1 (pod-a 8'100'000, pod-b
//               2'700'000); idle 7'200'000 by the holders (3'600'000 each).
//   GPU-excl:   power only, 200 W -> 12'000'000 mJ, power_integrated; pod-c
//               exclusive, spans 45 of 60 s -> busy 9'000'000, idle 3'000'000.
//   GPU-t4, MIG-d: no energy source -> unknown.
// Two windows, carbon 400 g/kWh: vision 47'400'000 mJ (0.013167 kWh, 5.27 g),
// nlp 12'600'000 mJ (0.0035 kWh, 1.4 g), __unallocated__ unknown.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ledger/accountant.h"
#include "ledger_dir_test.h"
#include "ledger_fixture.h"
#include "report/report.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;
using testing::kT0;

Observation with_energy(double t) { return testing::fixture_observation_with_energy(t); }

class EnergyLedgerTest : public testing::LedgerDirTest {
 protected:
  EnergyLedgerTest() : LedgerDirTest("gl_energy_") {}
  void SetUp() override {
    LedgerDirTest::SetUp();
    prices_ = parse_prices(std::string(testing::kFixturePrices) + "carbon_g_per_kwh: 400\n");
  }
  void run(Accountant& acc) {
    for (int t = 0; t <= 120; t += 10) acc.observe(with_energy(t));
  }
  PriceBook prices_;
};

using testing::window_of;

TEST_F(EnergyLedgerTest, WindowsStoreTheSplitEnergyExactly) {
  Store store(db());
  Accountant acc(store, prices_);
  run(acc);
  auto ws = store.windows(kT0, kT0 + 60);
  ASSERT_EQ(ws.size(), 4u);
  using K = ChargeKind;
  const WindowRecord& shared = window_of(ws, "GPU-shared");
  ASSERT_TRUE(shared.energy);
  EXPECT_EQ(shared.energy->millijoules, 18'000'000);
  EXPECT_EQ(shared.energy->source, "nvml");
  EXPECT_EQ(shared.energy->carbon_g_per_kwh, 400.0);
  std::vector<EnergyCharge> want{{"k8s/pod-a", K::kBusy, 8'100'000}, {"k8s/pod-a", K::kIdle, 3'600'000},
                                 {"k8s/pod-b", K::kBusy, 2'700'000}, {"k8s/pod-b", K::kIdle, 3'600'000}};
  EXPECT_EQ(shared.energy->charges, want);
  const WindowRecord& excl = window_of(ws, "GPU-excl");
  ASSERT_TRUE(excl.energy);
  EXPECT_EQ(excl.energy->source, "power_integrated");
  want = {{"k8s/pod-c", K::kBusy, 9'000'000}, {"k8s/pod-c", K::kIdle, 3'000'000}};
  EXPECT_EQ(excl.energy->charges, want);
  EXPECT_FALSE(window_of(ws, "GPU-t4").energy);  // unknown, not 0
  EXPECT_FALSE(window_of(ws, "MIG-d").energy);
}

// Observations every 25 s, off the window grid: each window still gets its own
// 60 s of energy (the crossing interval is split at the window's end).
TEST_F(EnergyLedgerTest, ObservationsOffTheWindowGrid) {
  Store store(db());
  Accountant acc(store, prices_);
  for (int t = 0; t <= 150; t += 25) acc.observe(with_energy(t));
  for (int64_t start : {kT0, kT0 + 60}) {
    auto ws = store.windows(start, start + 60);
    ASSERT_EQ(ws.size(), 4u);
    ASSERT_TRUE(window_of(ws, "GPU-shared").energy);
    EXPECT_EQ(window_of(ws, "GPU-shared").energy->millijoules, 18'000'000) << start;
    EXPECT_EQ(window_of(ws, "GPU-excl").energy->millijoules, 12'000'000) << start;
  }
}

TEST_F(EnergyLedgerTest, MetricsSeriesAndContinuityAcrossRestart) {
  {
    Store store(db());
    Accountant acc(store, prices_);
    run(acc);
    metrics::ExpositionWriter out;
    acc.write_metrics(out);
    const std::string& t = out.text();
    EXPECT_NE(t.find("# TYPE gpuledger_workload_gpu_energy_joules_total counter\n"), std::string::npos);
    EXPECT_NE(t.find("gpuledger_workload_gpu_energy_joules_total{namespace=\"ml\",pod=\"pod-a\",container=\"main\","
                     "team=\"vision\",UUID=\"GPU-shared\",kind=\"busy\",source=\"nvml\"} 16200\n"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("gpuledger_workload_gpu_energy_joules_total{namespace=\"ml\",pod=\"pod-c\",container=\"main\","
                     "team=\"vision\",UUID=\"GPU-excl\",kind=\"idle\",source=\"power_integrated\"} 6000\n"),
              std::string::npos)
        << t;
    EXPECT_EQ(t.find("UUID=\"GPU-t4\",kind=\"idle\",source="), std::string::npos);  // no source: no series
  }
  Store store(db());
  Accountant again(store, prices_);  // counters continue from the store
  metrics::ExpositionWriter out;
  again.write_metrics(out);
  EXPECT_NE(out.text().find("team=\"nlp\",UUID=\"GPU-shared\",kind=\"idle\",source=\"nvml\"} 7200\n"),
            std::string::npos)
      << out.text();
}

TEST_F(EnergyLedgerTest, EveryReportFormatShowsEnergyAndCarbonOrUnknown) {
  Store store(db());
  Accountant acc(store, prices_);
  run(acc);
  report::Report r = report::build_report(store, kT0, kT0 + 120, report::GroupBy::kTeam);
  std::map<std::string, const report::Row*> rows;
  for (const auto& row : r.rows) rows[row.key] = &row;
  EXPECT_EQ(rows.at("vision")->energy_millijoules, 47'400'000);
  EXPECT_EQ(rows.at("nlp")->energy_millijoules, 12'600'000);
  EXPECT_FALSE(rows.at("__unallocated__")->energy_millijoules);
  EXPECT_NEAR(*rows.at("nlp")->carbon_grams, 1.4, 1e-9);
  EXPECT_EQ(r.total.energy_millijoules, 60'000'000);
  EXPECT_NEAR(*r.total.carbon_grams, 60'000'000 / 3.6e9 * 400, 1e-9);

  const std::string table = report::render(r, report::Format::kTable, {.wide = true});  // energy: --wide
  EXPECT_NE(table.find("Energy kWh  kg CO2e"), std::string::npos) << table;
  EXPECT_NE(table.find("0.0035   0.0014\n"), std::string::npos) << table;  // nlp
  EXPECT_NE(table.find("unknown  unknown\n"), std::string::npos) << table;  // __unallocated__
  const std::string csv = report::render(r, report::Format::kCsv, {.csv_totals = true});
  EXPECT_NE(csv.find(",launches,energy_kwh,carbon_kg_co2e,allocated_share,"), std::string::npos) << csv;
  // nlp: energy, carbon, then allocated against used (its used energy share: 0.25)
  EXPECT_NE(csv.find(",0.003500,0.001400,0.650000,0.175000,0.000000,0.250000,under,USD,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.016667,0.006667,,,,,,USD,"), std::string::npos) << csv;  // TOTAL
  EXPECT_NE(csv.find(",0,,,,,,,,USD,"), std::string::npos) << csv;  // __unallocated__: unknown is empty
  auto j = nlohmann::json::parse(report::render(r, report::Format::kJson));
  EXPECT_EQ(j["total"]["energy_millijoules"], 60'000'000);
  bool saw_unknown = false;
  for (const auto& row : j["rows"])
    if (row["key"] == "__unallocated__") saw_unknown = row["energy_kwh"].is_null() && row["carbon_kg_co2e"].is_null();
  EXPECT_TRUE(saw_unknown) << j.dump();
  const std::string html = report::render(r, report::Format::kHtml);
  EXPECT_NE(html.find("<th>Energy (kWh)</th><th>Carbon (kg CO2e)</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>0.013</td><td>0.005</td>"), std::string::npos);  // vision, rounded for people
}

TEST_F(EnergyLedgerTest, HourlyRollUpConservesEnergy) {
  Store store(db());
  Accountant acc(store, prices_);
  run(acc);
  ASSERT_GT(store.roll_up_before(kT0 + 7200), 0);
  auto ws = store.windows(kT0 - 3600, kT0 + 3600);
  const WindowRecord& shared = window_of(ws, "GPU-shared");
  ASSERT_TRUE(shared.energy);
  EXPECT_EQ(shared.energy->millijoules, 36'000'000);
  int64_t sum = 0;
  for (const auto& c : shared.energy->charges) sum += c.millijoules;
  EXPECT_EQ(sum, 36'000'000);
  EXPECT_EQ(shared.energy->carbon_g_per_kwh, 400.0);
  EXPECT_FALSE(window_of(ws, "GPU-t4").energy);
}

// A schema 1 store (before energy) opens, is migrated to 2 in place, keeps its
// windows (energy unknown) and takes new windows with energy.
TEST_F(EnergyLedgerTest, MigratesSchemaOneStores) {
  {
    Store store(db());
    Accountant acc(store, parse_prices(testing::kFixturePrices));
    testing::run_fixture(acc, 0, 60);
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE energy_charges; DROP TABLE window_energy; PRAGMA user_version=1;", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  {
    Store ro(db(), Store::Mode::kReadOnly);  // a report on an unmigrated store: energy unknown, no error
    EXPECT_EQ(ro.schema_version(), 1);
    report::Report r = report::build_report(ro, kT0, kT0 + 60, report::GroupBy::kTeam);
    EXPECT_GT(r.total.cost_total_micros(), 0);
    EXPECT_FALSE(r.total.energy_millijoules);
  }
  Store store(db());
  EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
  auto old = store.windows(kT0, kT0 + 60);
  ASSERT_EQ(old.size(), 4u);
  for (const auto& w : old) EXPECT_FALSE(w.energy);
  Accountant acc(store, prices_);
  for (int t = 60; t <= 120; t += 10) acc.observe(with_energy(t));
  auto fresh = store.windows(kT0 + 60, kT0 + 120);
  ASSERT_EQ(fresh.size(), 4u);
  ASSERT_TRUE(window_of(fresh, "GPU-shared").energy);
  EXPECT_EQ(window_of(fresh, "GPU-shared").energy->millijoules, 18'000'000);
}

}  // namespace
}  // namespace gpuledger::ledger
