// Allocated against used and the cost policies through the whole ledger:
// hand-made allocations with shares (two HAMi pods at 0.3 and 0.5 of one GPU
// and a user holding nothing; 3 of 4 time-slicing replicas; a MIG slice; a DRA
// claim shared by two pods) -> accountant -> store (schema 3, and a schema 2
// store migrated) -> /metrics (promtool) -> every report format.
//
// GPU-frac is docs/ledger.md's worked example: 3.60 USD/h, 60 s (C = 60'000),
// device 50 % busy, busy seconds a 6, b 12, c 12, VRAM 10, 20, 10 GiB of 80,
// cost_policy allocated, memory_price_share 0.3.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ledger/accountant.h"
#include "ledger/hourly_rollup.h"
#include "ledger_dir_test.h"
#include "ledger_fixture.h"
#include "report/report.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;
using testing::kT0;
using K = ChargeKind;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const char* kPrices = R"(currency: USD
default_per_hour: 3.60
window_seconds: 60
cost_policy: allocated
memory_price_share: 0.3
)";

AccountLabels team(const std::string& pod) { return {"shared", pod, "main", "t-" + pod}; }

Observation observation(double t) {
  Observation o;
  o.time = static_cast<double>(kT0) + t;
  o.slots = {{"GPU-frac", "NVIDIA H100 80GB HBM3", std::nullopt, ""},
             {"GPU-ts", "NVIDIA H100 80GB HBM3", std::nullopt, ""},
             {"GPU-claim", "NVIDIA H100 80GB HBM3", std::nullopt, ""},
             {"MIG-m", "NVIDIA H100 80GB HBM3", "1g.10gb", "GPU-mig"}};
  o.holders = {{"GPU-frac", "a", team("a"), 0.3},   {"GPU-frac", "b", team("b"), 0.5},
               {"GPU-ts", "x", team("x"), 0.25},    {"GPU-ts", "x", team("x"), 0.25},
               {"GPU-ts", "y", team("y"), 0.25},    {"GPU-claim", "p", team("p"), 0.5},
               {"GPU-claim", "q", team("q"), 0.5},  {"MIG-m", "m", team("m"), 1.0}};
  const uint64_t gib = 1ull << 30;
  o.workloads = {{"a", team("a"), t / 10, static_cast<uint64_t>(t), 10 * gib, {"GPU-frac"}, {}},
                 {"b", team("b"), t / 5, static_cast<uint64_t>(t), 20 * gib, {"GPU-frac"}, {}},
                 {"c", team("c"), t / 5, static_cast<uint64_t>(t), 10 * gib, {"GPU-frac"}, {}},
                 {"x", team("x"), t / 2, static_cast<uint64_t>(t), 0, {"GPU-ts"}, {}},
                 {"p", team("p"), t / 4, static_cast<uint64_t>(t), 0, {"GPU-claim"}, {}}};
  DeviceSample frac;
  frac.busy_fraction = 0.5;
  frac.vram_capacity_bytes = 80 * kGiB;
  o.device["GPU-frac"] = frac;
  return o;
}

class AllocationLedgerTest : public testing::LedgerDirTest {
 protected:
  AllocationLedgerTest() : LedgerDirTest("gl_alloc_") {}
  static void run(Accountant& acc, int from = 0, int to = 60) {
    for (int t = from; t <= to; t += 10) acc.observe(observation(t));
  }
};

using testing::window_of;

const AccountRecord& account_of(const WindowRecord& w, const std::string& account) {
  for (const auto& a : w.accounts)
    if (a.account == account) return a;
  throw std::runtime_error("no account " + account);
}

TEST_F(AllocationLedgerTest, WindowsAreBilledByAllocationWithTheMemoryPart) {
  Store store(db());
  Accountant acc(store, parse_prices(kPrices));
  run(acc);
  const auto ws = store.windows(kT0, kT0 + 60);
  ASSERT_EQ(ws.size(), 4u);
  const WindowRecord& frac = window_of(ws, "GPU-frac");
  EXPECT_EQ(frac.cost_micros, 60'000);
  EXPECT_EQ(frac.memory_micros, 18'000);
  EXPECT_EQ(frac.cost_policy, "allocated");
  EXPECT_DOUBLE_EQ(frac.allocated_total, 0.8);
  EXPECT_EQ(frac.charges, (std::vector<Charge>{{"__unallocated__", K::kBusy, 4'200}, {"__unallocated__", K::kIdle, 4'200},
                                               {"__unallocated__", K::kMemory, 1'800},
                                               {"a", K::kBusy, 6'300}, {"a", K::kIdle, 6'300}, {"a", K::kMemory, 4'950},
                                               {"b", K::kBusy, 10'500}, {"b", K::kIdle, 10'500}, {"b", K::kMemory, 9'000},
                                               {"c", K::kMemory, 2'250}}));
  EXPECT_DOUBLE_EQ(account_of(frac, "a").allocated_share, 0.3);
  EXPECT_DOUBLE_EQ(account_of(frac, "c").allocated_share, 0);
  // 3 of 4 replicas: x 0.5, y 0.25, the fourth unallocated; no VRAM held: memory all unheld, by allocation too.
  const WindowRecord& ts = window_of(ws, "GPU-ts");
  EXPECT_EQ(ts.charges, (std::vector<Charge>{{"__unallocated__", K::kBusy, 5'250}, {"__unallocated__", K::kIdle, 5'250},
                                             {"__unallocated__", K::kMemory, 4'500},
                                             {"x", K::kBusy, 10'500}, {"x", K::kIdle, 10'500}, {"x", K::kMemory, 9'000},
                                             {"y", K::kBusy, 5'250}, {"y", K::kIdle, 5'250}, {"y", K::kMemory, 4'500}}));
  EXPECT_DOUBLE_EQ(account_of(ts, "x").allocated_share, 0.5);
  // The MIG slice (1 of 7: 8'571) is its holder's alone.
  const WindowRecord& mig = window_of(ws, "MIG-m");
  EXPECT_EQ(mig.charges, (std::vector<Charge>{{"m", K::kIdle, 6'000}, {"m", K::kMemory, 2'571}}));
  // The shared claim: p and q pay half each, whoever ran.
  int64_t p = 0, q = 0;
  for (const auto& c : window_of(ws, "GPU-claim").charges) (c.account == "p" ? p : q) += c.micros;
  EXPECT_EQ(p, 30'000);
  EXPECT_EQ(q, 30'000);
}

// x's replicas could not be counted (GpuAllocation::share_known false): GPU-ts
// is billed by activity under cost_policy allocated, and /metrics shows no
// allocated share for x (absent, not 1) and no unallocated rest for the slot.
TEST_F(AllocationLedgerTest, UnknownShareIsBilledByActivityAndHasNoAllocatedShare) {
  Store store(db());
  Accountant acc(store, parse_prices(kPrices));
  for (int t = 0; t <= 60; t += 10) {
    Observation o = observation(t);
    std::erase_if(o.holders, [](const HolderEntry& h) { return h.slot_uuid == "GPU-ts"; });
    o.holders.push_back({"GPU-ts", "x", team("x"), 1.0, false});
    o.holders.push_back({"GPU-ts", "y", team("y"), 0.25});
    acc.observe(o);
  }
  const auto ws = store.windows(kT0, kT0 + 60);
  const WindowRecord& ts = window_of(ws, "GPU-ts");
  EXPECT_EQ(ts.charges, (std::vector<Charge>{{"x", K::kBusy, 21'000}, {"x", K::kIdle, 21'000},
                                             {"x", K::kMemory, 18'000}, {"y", K::kIdle, 0}}));
  // The other slots are as before.
  EXPECT_EQ(window_of(ws, "MIG-m").charges, (std::vector<Charge>{{"m", K::kIdle, 6'000}, {"m", K::kMemory, 2'571}}));

  metrics::ExpositionWriter out;
  acc.write_metrics(out);
  const std::string& t = out.text();
  const std::string x = R"(namespace="shared",pod="x",container="main",team="t-x",UUID="GPU-ts")";
  const std::string y = R"(namespace="shared",pod="y",container="main",team="t-y",UUID="GPU-ts")";
  EXPECT_EQ(t.find("gpuledger_gpu_allocated_share_ratio{" + x + "}"), std::string::npos) << t;
  EXPECT_NE(t.find("gpuledger_gpu_allocated_share_ratio{" + y + "} 0.25\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("team=\"__unallocated__\",UUID=\"GPU-ts\""), std::string::npos) << t;
  EXPECT_NE(t.find("gpuledger_gpu_used_share_ratio{" + x + ",resource=\"activity\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gpuledger_cost_total{" + x + ",kind=\"memory\"} 0.018\n"), std::string::npos) << t;

  // The store keeps the mark (schema 5): reports show x's share as unknown
  // (never the placeholder 1), name x in a note, and flag it neither way.
  EXPECT_FALSE(account_of(ts, "x").allocated_share_known);
  EXPECT_TRUE(account_of(ts, "y").allocated_share_known);
  const report::Report r = report::build_report(store, kT0, kT0 + 60, report::GroupBy::kPod);
  std::map<std::string, const report::Row*> rows;
  for (const auto& row : r.rows) rows[row.key] = &row;
  EXPECT_EQ(rows.at("shared/x")->allocated_share(), std::nullopt);
  EXPECT_DOUBLE_EQ(*rows.at("shared/x")->used_share(), 1);
  EXPECT_EQ(rows.at("shared/x")->share_flag(), ShareFlag::kNone);
  EXPECT_DOUBLE_EQ(*rows.at("shared/y")->allocated_share(), 0.25);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("Allocated share unknown for shared/x: "), std::string::npos) << r.notes.back();
  const std::string table = report::render(r, report::Format::kTable);
  EXPECT_EQ(table.find("shared/x (allocated"), std::string::npos) << table;
  const auto json = nlohmann::json::parse(report::render(r, report::Format::kJson));
  for (const auto& row : json["rows"])
    if (row["key"] == "shared/x") EXPECT_TRUE(row["allocated_share"].is_null()) << row;
}

// Hourly roll-ups keep the memory part, the policy and the allocated shares.
TEST_F(AllocationLedgerTest, RollUpKeepsMemoryPartsAndAllocatedShares) {
  Store store(db());
  Accountant acc(store, parse_prices(kPrices));
  run(acc, 0, 120);
  EXPECT_EQ(store.roll_up_before(kT0 + 7200), 4);  // two windows per slot into one
  const auto ws = store.windows(kT0, kT0 + 3600);
  ASSERT_EQ(ws.size(), 4u);
  const WindowRecord& frac = window_of(ws, "GPU-frac");
  EXPECT_EQ(frac.end - frac.start, 120);
  EXPECT_EQ(frac.memory_micros, 36'000);
  EXPECT_EQ(frac.busy_micros + frac.idle_micros + frac.memory_micros, frac.cost_micros);
  EXPECT_EQ(frac.cost_policy, "allocated");
  EXPECT_DOUBLE_EQ(frac.allocated_total, 0.8);
  EXPECT_DOUBLE_EQ(account_of(frac, "a").allocated_share, 0.3);
  int64_t a_memory = 0;
  for (const auto& c : frac.charges)
    if (c.account == "a" && c.kind == K::kMemory) a_memory += c.micros;
  EXPECT_EQ(a_memory, 2 * 4'950);
  EXPECT_TRUE(account_of(frac, "a").allocated_share_known);
}

// An hour in which a holder's share was unknown in any window is unknown.
TEST_F(AllocationLedgerTest, RollUpKeepsAnUnknownShareUnknown) {
  Store store(db());
  Accountant acc(store, parse_prices(kPrices));
  run(acc, 0, 120);
  std::vector<WindowRecord> ws;
  for (auto& w : store.windows(kT0, kT0 + 120))
    if (w.slot.uuid == "GPU-frac") ws.push_back(std::move(w));
  ASSERT_EQ(ws.size(), 2u);
  for (auto& a : ws[1].accounts)
    if (a.account == "a") a.allocated_share_known = false;
  const WindowRecord hour = merge_windows(ws);
  EXPECT_FALSE(account_of(hour, "a").allocated_share_known);
  EXPECT_TRUE(account_of(hour, "b").allocated_share_known);
}

std::string promtool_check(const fs::path& page) {
  const std::string cmd = "promtool check metrics < " + page.string() + " 2>&1; echo rc=$?";
  FILE* out = ::popen(cmd.c_str(), "r");
  std::string report;
  char buf[512];
  while (out && ::fgets(buf, sizeof(buf), out)) report += buf;
  if (out) ::pclose(out);
  return report;
}

TEST_F(AllocationLedgerTest, MetricsSayAllocatedAgainstUsedAndPassPromtool) {
  Store store(db());
  Accountant acc(store, parse_prices(kPrices));
  run(acc);
  metrics::ExpositionWriter out;
  acc.write_metrics(out);
  const std::string& t = out.text();
  auto has = [&](const std::string& line) { EXPECT_NE(t.find(line + "\n"), std::string::npos) << line << "\n" << t; };
  has("# TYPE gpuledger_gpu_allocated_share_ratio gauge");
  has("# TYPE gpuledger_gpu_used_share_ratio gauge");
  const std::string a = R"(namespace="shared",pod="a",container="main",team="t-a",UUID="GPU-frac")";
  const std::string c = R"(namespace="shared",pod="c",container="main",team="t-c",UUID="GPU-frac")";
  has("gpuledger_gpu_allocated_share_ratio{" + a + "} 0.3");
  has("gpuledger_gpu_allocated_share_ratio{" + c + "} 0");  // uses the GPU, holds nothing
  has("gpuledger_gpu_used_share_ratio{" + a + ",resource=\"activity\"} 0.2");
  has("gpuledger_gpu_used_share_ratio{" + a + ",resource=\"vram\"} 0.25");
  has("gpuledger_gpu_used_share_ratio{" + c + ",resource=\"activity\"} 0.4");
  has("gpuledger_gpu_allocated_share_ratio{namespace=\"\",pod=\"\",container=\"\",team=\"__unallocated__\","
      "UUID=\"GPU-ts\"} 0.25");
  has("gpuledger_gpu_allocated_share_ratio{namespace=\"shared\",pod=\"x\",container=\"main\",team=\"t-x\","
      "UUID=\"GPU-ts\"} 0.5");
  has("gpuledger_cost_total{" + a + ",kind=\"memory\"} 0.00495");
  EXPECT_EQ(t.find("resource=\"energy\""), std::string::npos);  // no energy reading: no energy share
  const fs::path page = dir_ / "metrics.txt";
  std::ofstream(page) << t;
  const std::string lint = promtool_check(page);
  EXPECT_NE(lint.find("rc=0"), std::string::npos) << lint;
  EXPECT_EQ(lint.find("error"), std::string::npos) << lint;
}

TEST_F(AllocationLedgerTest, EveryReportFormatHasTheNewColumns) {
  Store store(db());
  Accountant acc(store, parse_prices(kPrices));
  run(acc);
  const report::Report r = report::build_report(store, kT0, kT0 + 60, report::GroupBy::kPod);
  std::map<std::string, const report::Row*> rows;
  for (const auto& row : r.rows) rows[row.key] = &row;
  EXPECT_EQ(rows.at("shared/a")->cost_memory_micros, 4'950);
  EXPECT_DOUBLE_EQ(*rows.at("shared/c")->allocated_share(), 0);
  EXPECT_DOUBLE_EQ(*rows.at("shared/c")->used_share(), 0.4);
  EXPECT_EQ(rows.at("shared/c")->share_flag(), ShareFlag::kOver);
  EXPECT_EQ(rows.at("shared/y")->share_flag(), ShareFlag::kUnder);  // 0.25 held, nothing run
  EXPECT_EQ(r.total.cost_total_micros(), 3 * 60'000 + 8'571);

  const std::string table = report::render(r, report::Format::kTable);
  EXPECT_NE(table.find("Idle cost  Memory cost  Total cost"), std::string::npos) << table;
  EXPECT_NE(table.find("Over-users (used more than allocated):\n"), std::string::npos) << table;
  EXPECT_NE(table.find("  shared/c (allocated 0.00, used 0.40)\n"), std::string::npos) << table;
  EXPECT_NE(table.find("  shared/y (allocated 0.25, used 0.00)\n"), std::string::npos) << table;
  const std::string csv = report::render(r, report::Format::kCsv);
  EXPECT_NE(csv.find(",cost_idle,cost_memory,cost_total,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",allocated_share,used_share,used_vram_share,used_energy_share,share_flag,currency,"),
            std::string::npos) << csv;
  EXPECT_NE(csv.find("shared/c,0.000000,0.003333,0.000000,0.000000,0.002250,0.002250,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.000000,0.400000,0.250000,,over,USD,"), std::string::npos) << csv;
  const auto j = nlohmann::json::parse(report::render(r, report::Format::kJson));
  EXPECT_EQ(j["share_flag_margin"], 0.1);
  bool c_over = false;
  for (const auto& o : j["over_users"])
    c_over |= o["key"] == "shared/c" && std::abs(o["used_share"].get<double>() - 0.4) < 1e-12;
  EXPECT_TRUE(c_over) << j["over_users"];
  for (const auto& row : j["rows"])
    if (row["key"] == "shared/a") {
      EXPECT_EQ(row["cost_memory_micros"], 4'950);
      EXPECT_EQ(row["allocated_share"], 0.3);
      EXPECT_EQ(row["share_flag"], "");
    }
  const std::string html = report::render(r, report::Format::kHtml);
  EXPECT_NE(html.find("<th>Memory cost (USD)</th>"), std::string::npos);
  EXPECT_NE(html.find("<table id=\"shares\">"), std::string::npos);
  EXPECT_NE(html.find("<ul id=\"over-users\"><li>shared/p: allocated 0.50, used 1.00</li>"), std::string::npos) << html;
  EXPECT_NE(html.find("<li>shared/c: allocated 0.00, used 0.40</li>"), std::string::npos) << html;
  EXPECT_NE(html.find("<ul id=\"under-users\">"), std::string::npos);
}

// A schema 2 store, as gpuledger wrote it before allocated shares and the
// memory part, with one window: a report reads it unmigrated; opened for
// writing it is migrated in place (held shares become allocated shares, the
// window was billed by usage with no memory part) and takes memory charges.
const char* kSchema2 = R"(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE windows(id INTEGER PRIMARY KEY, start INTEGER NOT NULL, end INTEGER NOT NULL, gpu_uuid TEXT NOT NULL,
  parent_uuid TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '', mig_profile TEXT,
  gpu_fraction REAL NOT NULL DEFAULT 1, currency TEXT NOT NULL, cost_micros INTEGER NOT NULL,
  busy_micros INTEGER NOT NULL, idle_micros INTEGER NOT NULL, busy_fraction REAL NOT NULL, busy_source TEXT NOT NULL,
  exclusive INTEGER NOT NULL, observed_seconds REAL NOT NULL, source TEXT NOT NULL,
  sm_active REAL, sm_occupancy REAL, tensor_active REAL, dram_active REAL, UNIQUE(start, gpu_uuid));
CREATE INDEX windows_end ON windows(end);
CREATE TABLE accounts(window_id INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE, account TEXT NOT NULL,
  namespace TEXT NOT NULL DEFAULT '', pod TEXT NOT NULL DEFAULT '', container TEXT NOT NULL DEFAULT '',
  team TEXT NOT NULL DEFAULT '', held_share REAL NOT NULL, busy_seconds REAL NOT NULL, activity_share REAL NOT NULL,
  gpu_busy_seconds REAL NOT NULL, vram_byte_seconds REAL NOT NULL, launches INTEGER NOT NULL,
  sm_active REAL, sm_occupancy REAL, tensor_active REAL, dram_active REAL,
  PRIMARY KEY(window_id, account)) WITHOUT ROWID;
CREATE TABLE charges(window_id INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE, account TEXT NOT NULL,
  kind TEXT NOT NULL CHECK(kind IN ('busy','idle')), micros INTEGER NOT NULL CHECK(micros >= 0),
  PRIMARY KEY(window_id, account, kind)) WITHOUT ROWID;
CREATE TABLE window_energy(window_id INTEGER PRIMARY KEY REFERENCES windows(id) ON DELETE CASCADE,
  millijoules INTEGER NOT NULL CHECK(millijoules >= 0), source TEXT NOT NULL, carbon_g_per_kwh REAL);
CREATE TABLE energy_charges(window_id INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
  account TEXT NOT NULL, kind TEXT NOT NULL CHECK(kind IN ('busy','idle')),
  millijoules INTEGER NOT NULL CHECK(millijoules >= 0), PRIMARY KEY(window_id, account, kind)) WITHOUT ROWID;
INSERT INTO windows VALUES(1, 1800000000, 1800000060, 'GPU-shared', '', 'NVIDIA H100 80GB HBM3', NULL, 1, 'USD',
  60000, 36000, 24000, 0.6, 'device', 0, 60, 'live', NULL, NULL, NULL, NULL);
INSERT INTO accounts VALUES(1, 'k8s/pod-a', 'ml', 'pod-a', 'main', 'vision', 0.5, 30, 0.75, 27, 0, 600,
  NULL, NULL, NULL, NULL);
INSERT INTO accounts VALUES(1, 'k8s/pod-b', 'nlp', 'pod-b', 'main', 'nlp', 0.5, 10, 0.25, 9, 0, 120,
  NULL, NULL, NULL, NULL);
INSERT INTO charges VALUES(1, 'k8s/pod-a', 'busy', 27000), (1, 'k8s/pod-a', 'idle', 12000),
  (1, 'k8s/pod-b', 'busy', 9000), (1, 'k8s/pod-b', 'idle', 12000);
INSERT INTO window_energy VALUES(1, 18000000, 'nvml', NULL);
INSERT INTO energy_charges VALUES(1, 'k8s/pod-a', 'busy', 18000000);
PRAGMA application_id = 1196444743;
PRAGMA user_version = 2;
)";

TEST_F(AllocationLedgerTest, MigratesSchemaTwoStores) {
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(raw, kSchema2, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(raw);
  }
  const std::vector<Charge> old_charges{{"k8s/pod-a", K::kBusy, 27'000}, {"k8s/pod-a", K::kIdle, 12'000},
                                        {"k8s/pod-b", K::kBusy, 9'000}, {"k8s/pod-b", K::kIdle, 12'000}};
  {
    Store ro(db(), Store::Mode::kReadOnly);  // a report on the unmigrated store
    EXPECT_EQ(ro.schema_version(), 2);
    const auto ws = ro.windows(kT0, kT0 + 60);
    ASSERT_EQ(ws.size(), 1u);
    EXPECT_EQ(ws[0].charges, old_charges);
    EXPECT_DOUBLE_EQ(ws[0].allocated_total, 1.0);
    EXPECT_DOUBLE_EQ(account_of(ws[0], "k8s/pod-a").allocated_share, 0.5);
  }
  Store store(db());
  EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
  auto ws = store.windows(kT0, kT0 + 60);
  ASSERT_EQ(ws.size(), 1u);
  const WindowRecord& old = ws[0];
  EXPECT_EQ(old.charges, old_charges);
  EXPECT_EQ(old.memory_micros, 0);
  EXPECT_EQ(old.cost_policy, "usage");
  EXPECT_DOUBLE_EQ(old.allocated_total, 1.0);
  EXPECT_DOUBLE_EQ(account_of(old, "k8s/pod-a").allocated_share, 0.5);
  ASSERT_TRUE(old.energy);
  EXPECT_EQ(old.energy->millijoules, 18'000'000);
  // New windows with memory charges go into the rebuilt charges table.
  Accountant acc(store, parse_prices(kPrices));
  run(acc, 60, 120);
  ws = store.windows(kT0 + 60, kT0 + 120);
  ASSERT_EQ(ws.size(), 4u);
  EXPECT_EQ(window_of(ws, "GPU-frac").memory_micros, 18'000);
  // Opening again is a no-op; deleting a window still cascades to its charges.
  Store again(db());
  EXPECT_EQ(again.schema_version(), kStoreSchemaVersion);
  EXPECT_EQ(again.delete_before(kT0 + 60), 1);
  EXPECT_TRUE(again.windows(kT0, kT0 + 60).empty());
}

}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

// The ledger counters fleet reports take shares from (share_seconds.h): per
// account, window GPU-seconds and those weighted by each share. x's share of
// GPU-ts is unknown: its allocated counter does not grow, the unknown one
// does; y holds 0.25 of it and used nothing. A restarted agent continues
// them from the store; promtool accepts the page.
TEST_F(AllocationLedgerTest, ShareCountersGrowByWindowAndContinueFromTheStore) {
  Store store(db());
  auto observe_unknown_x = [](Accountant& acc, int from, int to) {
    for (int t = from; t <= to; t += 10) {
      Observation o = observation(t);
      std::erase_if(o.holders, [](const HolderEntry& h) { return h.slot_uuid == "GPU-ts"; });
      o.holders.push_back({"GPU-ts", "x", team("x"), 1.0, false});
      o.holders.push_back({"GPU-ts", "y", team("y"), 0.25});
      acc.observe(o);
    }
  };
  const std::string x = R"({namespace="shared",pod="x",container="main",team="t-x",UUID="GPU-ts"})";
  const std::string y = R"({namespace="shared",pod="y",container="main",team="t-y",UUID="GPU-ts"})";
  const std::string a = R"({namespace="shared",pod="a",container="main",team="t-a",UUID="GPU-frac"})";
  const std::string c = R"({namespace="shared",pod="c",container="main",team="t-c",UUID="GPU-frac"})";
  auto page = [](const Accountant& acc) {
    metrics::ExpositionWriter out;
    acc.write_metrics(out);
    return out.text();
  };
  auto expect = [](const std::string& t, const std::string& line) {
    EXPECT_NE(t.find(line + "\n"), std::string::npos) << line << "\n" << t;
  };
  std::string t;
  {
    Accountant acc(store, parse_prices(kPrices));
    observe_unknown_x(acc, 0, 60);  // one 60 s window
    t = page(acc);
    expect(t, "# TYPE gpuledger_ledger_share_gpu_seconds_total counter");
    expect(t, "gpuledger_ledger_share_gpu_seconds_total" + x + " 60");
    expect(t, "gpuledger_ledger_allocated_share_gpu_seconds_total" + x + " 0");  // unknown: no growth
    expect(t, "gpuledger_ledger_allocated_share_unknown_gpu_seconds_total" + x + " 60");
    expect(t, "gpuledger_ledger_used_share_gpu_seconds_total" + x.substr(0, x.size() - 1) + ",resource=\"activity\"} 60");
    expect(t, "gpuledger_ledger_share_gpu_seconds_total" + y + " 60");
    expect(t, "gpuledger_ledger_allocated_share_gpu_seconds_total" + y + " 15");
    expect(t, "gpuledger_ledger_allocated_share_unknown_gpu_seconds_total" + y + " 0");
    expect(t, "gpuledger_ledger_used_share_gpu_seconds_total" + y.substr(0, y.size() - 1) + ",resource=\"activity\"} 0");
    // GPU-frac (known shares): a holds 0.3 and did 0.2 of the activity, 0.25 of the VRAM; c holds nothing.
    expect(t, "gpuledger_ledger_allocated_share_gpu_seconds_total" + a + " 18");
    expect(t, "gpuledger_ledger_used_share_gpu_seconds_total" + a.substr(0, a.size() - 1) + ",resource=\"activity\"} 12");
    expect(t, "gpuledger_ledger_used_share_gpu_seconds_total" + a.substr(0, a.size() - 1) + ",resource=\"vram\"} 15");
    expect(t, "gpuledger_ledger_allocated_share_gpu_seconds_total" + c + " 0");
    expect(t, "gpuledger_ledger_used_share_gpu_seconds_total" + c.substr(0, c.size() - 1) + ",resource=\"activity\"} 24");
    // No energy reading and no carbon intensity: those series are absent, not 0.
    EXPECT_EQ(t.find("resource=\"energy\""), std::string::npos) << t;
    EXPECT_EQ(t.find("gpuledger_ledger_energy_share_gpu_seconds_total{"), std::string::npos) << t;
    EXPECT_EQ(t.find("gpuledger_ledger_carbon_grams_total{"), std::string::npos) << t;
    const fs::path file = dir_ / "metrics.txt";
    std::ofstream(file) << t;
    const std::string lint = promtool_check(file);
    EXPECT_NE(lint.find("rc=0"), std::string::npos) << lint;
    EXPECT_EQ(lint.find("error"), std::string::npos) << lint;
  }
  Accountant restarted(store, parse_prices(kPrices));
  const std::string again = page(restarted);
  for (const std::string series : {"gpuledger_ledger_share_gpu_seconds_total" + x + " 60",
                                   "gpuledger_ledger_allocated_share_unknown_gpu_seconds_total" + x + " 60",
                                   "gpuledger_ledger_allocated_share_gpu_seconds_total" + y + " 15",
                                   "gpuledger_ledger_allocated_share_gpu_seconds_total" + a + " 18"})
    expect(again, series);
  observe_unknown_x(restarted, 60, 120);  // the next window adds to them
  expect(page(restarted), "gpuledger_ledger_allocated_share_unknown_gpu_seconds_total" + x + " 120");
  expect(page(restarted), "gpuledger_ledger_allocated_share_gpu_seconds_total" + y + " 30");
}

// With energy and a carbon intensity (ledger_fixture.h's energy node, two
// windows at 400 g/kWh): pod-a's carbon is its 23'400'000 mJ x 400 g/kWh, its
// energy share 3/4 of the busy energy over the two windows; the T4 (no energy
// source) has neither. Continued from the store; promtool accepts the page.
TEST_F(AllocationLedgerTest, CarbonAndEnergyShareCountersWhereEnergyIsKnown) {
  Store store(db());
  const PriceBook prices = parse_prices(std::string(testing::kFixturePrices) + "carbon_g_per_kwh: 400\n");
  const std::string pod_a = R"({namespace="ml",pod="pod-a",container="main",team="vision",UUID="GPU-shared"})";
  auto value = [](const std::string& page, const std::string& series) {
    const size_t at = page.find(series + " ");
    return at == std::string::npos ? -1.0 : std::stod(page.substr(at + series.size() + 1));
  };
  std::string t;
  {
    Accountant acc(store, prices);
    for (int s = 0; s <= 120; s += 10) acc.observe(testing::fixture_observation_with_energy(s));
    metrics::ExpositionWriter out;
    acc.write_metrics(out);
    t = out.text();
  }
  EXPECT_NEAR(value(t, "gpuledger_ledger_carbon_grams_total" + pod_a), 2.6, 1e-12) << t;
  EXPECT_EQ(value(t, "gpuledger_ledger_energy_share_gpu_seconds_total" + pod_a), 120) << t;
  EXPECT_EQ(value(t, "gpuledger_ledger_used_share_gpu_seconds_total" + pod_a.substr(0, pod_a.size() - 1) +
                         ",resource=\"energy\"}"),
            90)
      << t;
  EXPECT_EQ(t.find("gpuledger_ledger_carbon_grams_total{namespace=\"\",pod=\"\",container=\"\",team=\"__unallocated__\""),
            std::string::npos)
      << t;
  const fs::path file = dir_ / "metrics.txt";
  std::ofstream(file) << t;
  const std::string lint = promtool_check(file);
  EXPECT_NE(lint.find("rc=0"), std::string::npos) << lint;
  EXPECT_EQ(lint.find("error"), std::string::npos) << lint;

  Accountant restarted(store, prices);
  metrics::ExpositionWriter again;
  restarted.write_metrics(again);
  EXPECT_DOUBLE_EQ(value(again.text(), "gpuledger_ledger_carbon_grams_total" + pod_a),
                   value(t, "gpuledger_ledger_carbon_grams_total" + pod_a));
  EXPECT_EQ(value(again.text(), "gpuledger_ledger_energy_share_gpu_seconds_total" + pod_a), 120);
}

}  // namespace
}  // namespace gpuledger::ledger
