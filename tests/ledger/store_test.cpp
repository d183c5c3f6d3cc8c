#include "ledger/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <fstream>

#include "common/error.h"
#include "ledger/hourly_rollup.h"
#include "ledger/window_evidence.h"
#include "ledger_dir_test.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;

class StoreTest : public testing::LedgerDirTest {
 protected:
  StoreTest() : LedgerDirTest("gl_store_") {}
  std::string path(const std::string& name = "ledger.db") const { return (dir_ / name).string(); }
};

WindowRecord sample(int64_t start, const std::string& uuid = "GPU-1") {
  WindowRecord w;
  w.start = start;
  w.end = start + 60;
  w.slot = {uuid, "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  w.currency = "USD";
  w.cost_micros = 68'333;
  w.busy_micros = 34'167;
  w.idle_micros = 34'166;
  w.busy_fraction = 0.5;
  w.busy_source = "device";
  w.exclusive = true;
  w.observed_seconds = 60;
  w.device = {0.5, 0.25, std::nullopt, 0.1};
  AccountRecord a;
  a.account = "k8s/pod-a";
  a.labels = {"ml", "trainer", "main", "vision"};
  a.held_share = 1;
  a.busy_seconds = 30;
  a.activity_share = 1;
  a.gpu_busy_seconds = 30;
  a.vram_byte_seconds = 1e10;
  a.launches = 1234;
  a.efficiency = w.device;
  w.accounts = {a};
  w.charges = {{"k8s/pod-a", ChargeKind::kBusy, 34'167}, {"k8s/pod-a", ChargeKind::kIdle, 34'166}};
  return w;
}

TEST_F(StoreTest, RoundTripAndIdempotentInsert) {
  {
    Store s(path());
    EXPECT_EQ(s.schema_version(), kStoreSchemaVersion);
    EXPECT_FALSE(s.last_window_end());
    EXPECT_TRUE(s.insert_window(sample(600)));
    EXPECT_TRUE(s.insert_window(sample(660)));
    EXPECT_TRUE(s.insert_window(sample(600, "GPU-2")));
    WindowRecord again = sample(600);
    again.cost_micros = again.busy_micros = 0;
    again.idle_micros = 0;
    again.charges.clear();
    EXPECT_FALSE(s.insert_window(again));  // same (start, gpu): ignored, not doubled
  }
  Store s(path(), Store::Mode::kReadOnly);  // a restart sees the same ledger
  EXPECT_EQ(s.last_window_end(), 720);
  auto ws = s.windows(0, 10'000);
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(ws[0], sample(600));
  EXPECT_EQ(ws[1], sample(600, "GPU-2"));
  EXPECT_EQ(ws[2], sample(660));
  EXPECT_EQ(s.windows(601, 660).size(), 0u);
}

// The agent's store checks its file as it opens it (PRAGMA quick_check reads
// every page); the shipper's second connection to the same file skips it
// (Check::kCheckedByOwner): a damaged page is what only the check finds.
TEST_F(StoreTest, OnlyTheOwnersOpeningChecksEveryPage) {
  {
    Store s(path());
    for (int i = 0; i < 400; ++i) ASSERT_TRUE(s.insert_window(sample(60 * i)));
  }
  const auto size = fs::file_size(path());
  ASSERT_GT(size, 8 * 4096u);
  {
    std::fstream f(path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 4096));  // the last page: a table's or an index's, never the schema's
    const std::string junk(4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  try {
    Store s(path());
    ADD_FAILURE() << "a damaged page went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt (quick_check: "), std::string::npos) << e.what();
  }
  Store shipper(path(), Store::Mode::kReadWriteOneThread, Store::Check::kCheckedByOwner);
  EXPECT_EQ(shipper.schema_version(), kStoreSchemaVersion);
}

// Meta keys by exact name and by prefix (the fleet shipper's kept merges,
// fleet_rollups.h); a store for one thread (the shipper's) reads and writes
// the same file as the agent's.
TEST_F(StoreTest, MetaKeysAreReadExactlyAndErasedByPrefix) {
  {
    Store s(path());
    s.set_meta("fleet/merge/hour/3600/", "a");
    s.set_meta("fleet/merge/hour/36000/", "b");
    s.set_meta("fleet/merge/day/0/", "c");
    s.set_meta("fleet/rolled/hour", "7200");
  }
  Store s(path(), Store::Mode::kReadWriteOneThread);
  EXPECT_EQ(s.meta("fleet/merge/hour/3600/"), "a");
  EXPECT_FALSE(s.meta("fleet/merge/hour/3600"));
  EXPECT_EQ(s.erase_meta_with_prefix("fleet/merge/hour/3600/"), 1);  // not 36000's
  EXPECT_EQ(s.meta_with_prefix("fleet/merge/").size(), 2u);
  EXPECT_EQ(s.erase_meta_with_prefix("fleet/merge/"), 2);
  EXPECT_EQ(s.meta_with_prefix("fleet/"), (std::vector<std::pair<std::string, std::string>>{{"fleet/rolled/hour", "7200"}}));
  EXPECT_TRUE(s.insert_window(sample(600)));
  EXPECT_EQ(Store(path(), Store::Mode::kReadOnly).windows(0, 10'000).size(), 1u);
}

TEST_F(StoreTest, WalMode) {
  Store s(path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(StoreTest, RejectsChargesThatDoNotAddUp) {
  Store s(path());
  WindowRecord w = sample(0);
  w.charges[0].micros += 1;
  EXPECT_THROW(s.insert_window(w), Error);
  EXPECT_FALSE(s.last_window_end());
}

TEST_F(StoreTest, Retention) {
  Store s(path());
  for (int i = 0; i < 5; ++i) s.insert_window(sample(i * 60));
  EXPECT_EQ(s.delete_before(120), 2);
  auto ws = s.windows(0, 1000);
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(ws[0].start, 120);
}

TEST_F(StoreTest, StreamingSeesWhatWindowsReturns) {
  Store s(path());
  for (int i = 0; i < 5; ++i) {
    s.insert_window(sample(i * 60, "GPU-2"));
    s.insert_window(sample(i * 60, "GPU-1"));
  }
  std::vector<WindowRecord> streamed;
  s.for_each_window(60, 240, [&](WindowRecord&& w) { streamed.push_back(std::move(w)); });
  ASSERT_EQ(streamed.size(), 6u);
  auto sorted = s.windows(60, 240);
  std::sort(streamed.begin(), streamed.end(),
            [](const auto& x, const auto& y) { return std::tie(x.start, x.slot.uuid) < std::tie(y.start, y.slot.uuid); });
  EXPECT_EQ(streamed, sorted);
  EXPECT_EQ(sorted[0], sample(60, "GPU-1"));
}

// Two holders of a shared GPU, one charged more than the other, over two
// hours of 60 s windows, then rolled up: per GPU and per account, every
// micro-unit and every held second is still there.
WindowRecord shared_window(int64_t start, int64_t cost, const std::string& uuid) {
  WindowRecord w = sample(start, uuid);
  w.cost_micros = cost;
  w.busy_micros = cost / 3;
  w.idle_micros = cost - cost / 3;
  AccountRecord b = w.accounts[0];
  b.account = "k8s/pod-b";
  b.labels.team = start < 3600 ? "" : "nlp";  // labels learned later: the latest win
  b.held_share = 0.25;
  b.launches = 7;
  b.efficiency.sm_active = std::nullopt;
  w.accounts[0].held_share = 0.75;
  w.accounts.push_back(b);
  w.charges = {{"k8s/pod-a", ChargeKind::kBusy, w.busy_micros},
               {"k8s/pod-a", ChargeKind::kIdle, w.idle_micros / 2},
               {"k8s/pod-b", ChargeKind::kIdle, w.idle_micros - w.idle_micros / 2}};
  return w;
}

TEST_F(StoreTest, RollUpKeepsEveryMicroUnitPerGpuAndAccount) {
  Store s(path());
  for (int64_t t = 0; t < 3 * 3600; t += 60)
    for (const char* gpu : {"GPU-1", "GPU-2"}) s.insert_window(shared_window(t, 68'333 + t % 7, gpu));
  const LedgerTotals before = s.totals();
  const auto detail = s.windows(0, 3600);
  // The third hour is younger than the cutoff: it keeps its windows.
  EXPECT_EQ(s.roll_up_before(2 * 3600 + 1800, 0), 0);  // no day's work allowed: nothing done
  EXPECT_EQ(s.roll_up_before(2 * 3600 + 1800), 2 * 2 * 59);
  EXPECT_EQ(s.roll_up_before(2 * 3600 + 1800), 0);  // idempotent
  auto ws = s.windows(0, 3 * 3600);
  ASSERT_EQ(ws.size(), 2u * 2 + 2 * 60);
  const WindowRecord& hour = ws[0];
  EXPECT_EQ(hour.start, 0);
  EXPECT_EQ(hour.end, 3600);
  EXPECT_EQ(hour.slot.uuid, "GPU-1");
  int64_t cost = 0;
  for (const auto& w : detail)
    if (w.slot.uuid == "GPU-1") cost += w.cost_micros;
  EXPECT_EQ(hour.cost_micros, cost);
  ASSERT_EQ(hour.accounts.size(), 2u);
  EXPECT_DOUBLE_EQ(hour.accounts[0].held_share, 0.75);
  EXPECT_EQ(hour.accounts[1].launches, 60u * 7);
  EXPECT_EQ(hour.accounts[1].labels.team, "");       // never learned within the hour
  EXPECT_EQ(ws[2].accounts[1].labels.team, "nlp");   // the second hour's
  EXPECT_FALSE(hour.accounts[1].efficiency.sm_active);  // unknown stays unknown
  EXPECT_DOUBLE_EQ(*hour.accounts[0].efficiency.sm_active, 0.5);
  // Exact, per GPU, account and kind; held seconds to rounding.
  const LedgerTotals after = s.totals();
  ASSERT_EQ(after.cost.size(), before.cost.size());
  for (size_t i = 0; i < before.cost.size(); ++i) {
    EXPECT_EQ(after.cost[i].micros, before.cost[i].micros) << before.cost[i].account << " " << before.cost[i].uuid;
    EXPECT_EQ(after.cost[i].kind, before.cost[i].kind);
  }
  ASSERT_EQ(after.seconds.size(), before.seconds.size());
  double held_before = 0;
  for (size_t i = 0; i < before.seconds.size(); ++i) {
    EXPECT_NEAR(after.seconds[i].held_gpu_seconds, before.seconds[i].held_gpu_seconds, 1e-6);
    EXPECT_NEAR(after.seconds[i].busy_gpu_seconds, before.seconds[i].busy_gpu_seconds, 1e-6);
    held_before += before.seconds[i].held_gpu_seconds;
  }
  EXPECT_EQ(held_before, 2 * 3 * 3600.0);
}

TEST(HourlyRollup, MergeKeepsAgreementAndSaysMixed) {
  WindowRecord a, b;
  a.start = 0, a.end = 60, b.start = 60, b.end = 120;
  a.source = b.source = "live";
  a.busy_source = "device", b.busy_source = "spans";
  a.busy_fraction = 1.0, b.busy_fraction = 0.0;
  a.device.sm_active = 0.4;  // b has no device reading
  WindowRecord m = merge_windows({a, b});
  EXPECT_EQ(m.source, "live");
  EXPECT_EQ(m.busy_source, "mixed");
  EXPECT_DOUBLE_EQ(m.busy_fraction, 0.5);
  EXPECT_DOUBLE_EQ(*m.device.sm_active, 0.4);
  EXPECT_FALSE(m.device.dram_active);
}

std::string open_error(const std::string& p, Store::Mode mode = Store::Mode::kReadWrite) {
  try {
    Store s(p, mode);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(StoreTest, CorruptFileIsAClearError) {
  {
    std::ofstream out(path(), std::ios::binary);
    for (int i = 0; i < 4096; ++i) out << "garbage!";
  }
  std::string msg = open_error(path());
  EXPECT_NE(msg.find("ledger store " + path() + ": not a usable SQLite database"), std::string::npos) << msg;
  msg = open_error(path(), Store::Mode::kReadOnly);
  EXPECT_NE(msg.find("not a usable SQLite database"), std::string::npos) << msg;
}

TEST_F(StoreTest, TruncatedStoreIsAClearError) {
  { Store s(path()); for (int i = 0; i < 50; ++i) s.insert_window(sample(i * 60)); }
  // Damage the page after the header.
  {
    std::fstream f(path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    std::string junk(8000, '\xAB');
    f.write(junk.data(), junk.size());
  }
  std::string msg;
  try {
    Store s(path());
    s.windows(0, 1'000'000);
    msg = "no error";
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("ledger store " + path()), std::string::npos) << msg;
}

TEST_F(StoreTest, NewerSchemaIsAClearError) {
  { Store s(path()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(open_error(path()), "ledger store " + path() +
                                    ": schema version 99 is newer than this gpuledger understands (" + std::to_string(kStoreSchemaVersion) + "); use a newer "
                                    "gpuledger to read it");
}

TEST_F(StoreTest, ForeignDatabaseAndMissingFile) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path("other.db").c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_NE(open_error(path("other.db")).find("not a gpuledger ledger store"), std::string::npos);
  EXPECT_NE(open_error(path("missing.db"), Store::Mode::kReadOnly).find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

// Tenants name their cgroups: an account or label with invalid UTF-8 is
// stored (and read back) with each bad sequence as U+FFFD, never raw.
TEST_F(StoreTest, InvalidUtf8NamesAreStoredAsValidText) {
  WindowRecord w = sample(1'800'000'000);
  w.accounts[0].account = "k8s/pod-\xff";
  w.accounts[0].labels.team = "vis\xc3(ion";
  for (auto& c : w.charges) c.account = "k8s/pod-\xff";
  {
    Store store(path());
    ASSERT_TRUE(store.insert_window(w));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT hex(account), hex(team) FROM accounts", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "6B38732F706F642DEFBFBD");  // k8s/pod-U+FFFD
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)), "766973EFBFBD28696F6E");    // vis U+FFFD (ion
  sqlite3_finalize(st);
  sqlite3_close(db);
  Store store(path(), Store::Mode::kReadOnly);
  auto windows = store.windows(w.start, w.end);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].accounts[0].account, "k8s/pod-\xef\xbf\xbd");
  EXPECT_EQ(windows[0].charges.size(), 2u);
}

}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

// Issue 10: the counters the stored windows were charged up to are stored in
// the windows' transaction, and replaced by the next.
TEST_F(StoreTest, CounterBaselineRoundTrip) {
  Store store(path());
  EXPECT_EQ(store.counter_baseline(), std::nullopt) << "none before a window is stored";
  const CounterBaseline first{"boot/7", {{"k8s/pod-a", {12.5, 1000}}, {"k8s/pod-b", {0, 3}}}};
  EXPECT_EQ(store.store_windows({sample(0), sample(0, "GPU-2")}, first), (std::vector<bool>{true, true}));
  EXPECT_EQ(store.counter_baseline(), first);
  const CounterBaseline second{"boot/7", {{"k8s/pod-a", {20.0, 1800}}}};
  EXPECT_EQ(store.store_windows({sample(0), sample(60)}, second), (std::vector<bool>{false, true}));
  EXPECT_EQ(store.counter_baseline(), second) << "replaced, the retired pod-b gone";
  EXPECT_EQ(store.windows(0, 120).size(), 3u);
  // A window whose charges do not add up stores neither it nor the baseline.
  WindowRecord bad = sample(120);
  bad.charges.pop_back();
  EXPECT_THROW(store.store_windows({bad}, CounterBaseline{"boot/8", {}}), Error);
  EXPECT_EQ(store.counter_baseline(), second);
  Store again(path(), Store::Mode::kReadOnly);
  EXPECT_EQ(again.counter_baseline(), second);
}

// A schema 3 store (what main wrote before the baseline) is read as it is by a
// report and migrated to the current schema by the agent; it has no baseline until a window.
TEST_F(StoreTest, SchemaThreeStoresMigrate) {
  {
    Store store(path());
    ASSERT_TRUE(store.insert_window(sample(0)));
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE counter_baseline; PRAGMA user_version = 3;", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  {
    Store report(path(), Store::Mode::kReadOnly);
    EXPECT_EQ(report.schema_version(), 3);
    EXPECT_EQ(report.windows(0, 60), std::vector<WindowRecord>{sample(0)});
    EXPECT_EQ(report.counter_baseline(), std::nullopt);
  }
  Store store(path());
  EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
  EXPECT_EQ(store.windows(0, 60), std::vector<WindowRecord>{sample(0)});
  EXPECT_EQ(store.counter_baseline(), std::nullopt);
  const CounterBaseline b{"boot/7", {{"k8s/pod-a", {1.0, 2}}}};
  EXPECT_EQ(store.store_windows({sample(60)}, b), std::vector<bool>{true});
  EXPECT_EQ(store.counter_baseline(), b);
  Store again(path());
  EXPECT_EQ(again.schema_version(), kStoreSchemaVersion);
}

// Schema 5: a holder's share that was unknown is stored as unknown, never as
// its placeholder. A schema 4 store (no such column) reads every share as
// known, and the agent migrates it in place.
TEST_F(StoreTest, AnUnknownAllocatedShareIsStoredAsUnknownAndSchemaFourMigrates) {
  WindowRecord unknown = sample(0);
  ASSERT_FALSE(unknown.accounts.empty());
  unknown.accounts.front().allocated_share_known = false;
  {
    Store store(path());
    ASSERT_TRUE(store.insert_window(unknown));
    EXPECT_EQ(store.windows(0, 60), std::vector<WindowRecord>{unknown});
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "ALTER TABLE accounts DROP COLUMN allocated_share_known; PRAGMA user_version = 4;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  {
    Store report(path(), Store::Mode::kReadOnly);
    EXPECT_EQ(report.schema_version(), 4);
    EXPECT_EQ(report.windows(0, 60), std::vector<WindowRecord>{sample(0)});  // every share known
  }
  Store store(path());
  EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
  EXPECT_EQ(store.windows(0, 60), std::vector<WindowRecord>{sample(0)});
  WindowRecord later = sample(60);
  later.accounts.front().allocated_share_known = false;
  ASSERT_TRUE(store.insert_window(later));
  EXPECT_EQ(store.windows(60, 120), std::vector<WindowRecord>{later});
}

}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

// Schema 6: the rightsizing evidence round-trips; a schema 5 store (no such
// columns) reads with none (VRAM peaks unknown, the rest derived from each
// window's columns), and the agent migrates it in place.
TEST_F(StoreTest, RightsizingEvidenceRoundTripsAndSchemaFiveMigrates) {
  WindowRecord with = sample(0);
  AccountEvidence& ev = with.accounts.front().evidence;
  ev.vram_peak_bytes = 6'000'000'000;
  ev.nvml_vram_peak_bytes = 6'500'000'000;
  {
    Store store(path());
    ASSERT_TRUE(store.insert_window(with));
    EXPECT_EQ(store.windows(0, 60), std::vector<WindowRecord>{with});
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    std::string drop;
    for (const char* c : {"vram_peak_bytes", "vram_p95_bytes", "nvml_vram_peak_bytes", "nvml_vram_p95_bytes",
                          "sm_active_p95", "sm_occupancy_p95", "busy_p95", "idle_lead_seconds", "idle_trail_seconds",
                          "idle_longest_seconds", "window_count"})
      drop += std::string("ALTER TABLE accounts DROP COLUMN ") + c + ";";
    ASSERT_EQ(sqlite3_exec(raw, (drop + "PRAGMA user_version = 5;").c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  {
    Store report(path(), Store::Mode::kReadOnly);
    EXPECT_EQ(report.schema_version(), 5);
    EXPECT_EQ(report.windows(0, 60), std::vector<WindowRecord>{sample(0)});  // no evidence: peaks unknown
  }
  Store store(path());
  EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
  EXPECT_GE(kStoreSchemaVersion, 8);
  EXPECT_EQ(store.windows(0, 60), std::vector<WindowRecord>{sample(0)});
  WindowRecord later = with;
  later.start = 60, later.end = 120;
  ASSERT_TRUE(store.insert_window(later));
  EXPECT_EQ(store.windows(60, 120), std::vector<WindowRecord>{later});
}

// An hour rolled up keeps the peak exactly, the p95 of its windows, and its
// idle runs: 10 idle minutes, 1 busy, 49 idle -> lead 600, trail 2940, longest 2940.
TEST_F(StoreTest, RollUpKeepsPeaksP95AndIdleRuns) {
  Store s(path());
  for (int i = 0; i < 60; ++i) {
    WindowRecord w = sample(i * 60);
    AccountRecord& a = w.accounts.front();
    a.launches = i == 10 ? 5 : 0;
    a.busy_seconds = i == 10 ? 60 : 0;
    a.evidence.vram_peak_bytes = uint64_t{1'000'000'000} * (i + 1);  // 1 GB .. 60 GB
    a.efficiency.sm_active = i / 100.0;                                // 0.00 .. 0.59
    s.insert_window(w);
  }
  ASSERT_EQ(s.roll_up_before(3600), 59);
  const auto ws = s.windows(0, 3600);
  ASSERT_EQ(ws.size(), 1u);
  const AccountEvidence& ev = ws[0].accounts.front().evidence;
  EXPECT_EQ(ev.vram_peak_bytes, 60'000'000'000u);
  EXPECT_EQ(ev.vram_p95_bytes, 57'000'000'000u);  // nearest rank: the 57th of 60
  EXPECT_DOUBLE_EQ(*ev.sm_active_p95, 0.56);
  EXPECT_DOUBLE_EQ(*ev.busy_p95, 0.0);  // one busy minute in 60
  ASSERT_TRUE(ev.idle);
  EXPECT_EQ(*ev.idle, (IdleRun{600, 2940, 2940}));
  EXPECT_EQ(ev.windows, 60);
  EXPECT_FALSE(ev.nvml_vram_peak_bytes);  // unknown stays unknown
}

TEST(WindowEvidence, IdleRunsJoinAcrossRecords) {
  const IdleRun idle_hour{3600, 3600, 3600}, busy_end{3000, 0, 3000}, busy{0, 0, 0};
  EXPECT_EQ(join_idle(idle_hour, 3600, idle_hour, 3600), (IdleRun{7200, 7200, 7200}));
  EXPECT_EQ(join_idle(idle_hour, 3600, busy_end, 3600), (IdleRun{6600, 0, 6600}));
  EXPECT_EQ(join_idle(busy, 3600, idle_hour, 3600), (IdleRun{0, 3600, 3600}));
  EXPECT_EQ(weighted_p95({{1, 19}, {2, 1}}), 1.0);   // rank 19 of 20
  EXPECT_EQ(weighted_p95({{1, 18}, {2, 2}}), 2.0);
  EXPECT_EQ(weighted_p95({}), std::nullopt);
}

}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

// Schema 9: the device data's quality and allocation against use round-trip,
// roll up as counts and sums; a schema 8 store (no such columns) reads as not
// judged / not observed and migrates in place.
WindowRecord judged(int64_t start, bool suspect) {
  WindowRecord w = sample(start);
  if (suspect) {
    w.device_quality.suspect = 1;
    w.device_findings = {{"sm_active:zero_while_busy", 1}, {"gr_engine_active:zero_while_busy", 1}};
    w.device = {std::nullopt, std::nullopt, std::nullopt, std::nullopt};
    w.accounts.front().efficiency = w.device;
  } else {
    w.device_quality.ok = 1;
  }
  w.accounts.front().used_unallocated_seconds = 12.5;
  w.accounts.front().allocated_unused_seconds = suspect ? 0.0 : 30.0;
  return w;
}

TEST_F(StoreTest, DeviceQualityAndUseRoundTripAndSchemaEightMigrates) {
  {
    Store store(path());
    ASSERT_TRUE(store.insert_window(judged(0, true)));
    ASSERT_TRUE(store.insert_window(judged(60, false)));
    EXPECT_EQ(store.windows(0, 120), (std::vector<WindowRecord>{judged(0, true), judged(60, false)}));
    const LedgerTotals t = store.totals();
    EXPECT_EQ(t.device_findings.at({"GPU-1", "sm_active:zero_while_busy"}), 1);
    ASSERT_EQ(t.seconds.size(), 1u);
    EXPECT_DOUBLE_EQ(t.seconds[0].used_unallocated_seconds, 25);
    EXPECT_DOUBLE_EQ(t.seconds[0].allocated_unused_seconds, 30);
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    std::string drop;
    for (const char* c : {"device_ok", "device_suspect", "device_absent", "device_findings"})
      drop += std::string("ALTER TABLE windows DROP COLUMN ") + c + ";";
    for (const char* c : {"used_unallocated_seconds", "allocated_unused_seconds"})
      drop += std::string("ALTER TABLE accounts DROP COLUMN ") + c + ";";
    ASSERT_EQ(sqlite3_exec(raw, (drop + "PRAGMA user_version = 8;").c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  auto unjudged = [](WindowRecord w) {
    w.device_quality = {};
    w.device_findings.clear();
    w.accounts.front().used_unallocated_seconds.reset();
    w.accounts.front().allocated_unused_seconds.reset();
    return w;
  };
  {
    Store report(path(), Store::Mode::kReadOnly);
    EXPECT_EQ(report.schema_version(), 8);
    EXPECT_EQ(report.windows(0, 120), (std::vector<WindowRecord>{unjudged(judged(0, true)), unjudged(judged(60, false))}));
    EXPECT_TRUE(report.totals().device_findings.empty());
  }
  Store store(path());
  EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
  EXPECT_GE(kStoreSchemaVersion, 9);
  EXPECT_EQ(store.windows(0, 120), (std::vector<WindowRecord>{unjudged(judged(0, true)), unjudged(judged(60, false))}));
  ASSERT_TRUE(store.insert_window(judged(120, true)));
  EXPECT_EQ(store.windows(120, 180), std::vector<WindowRecord>{judged(120, true)});
}

// A Slurm job's user and account (schema 10): stored, read back, kept by an
// hourly roll-up; a schema 9 store opens (read-only as it is, then migrated)
// with its old rows' user and account empty.
WindowRecord slurm_job(int64_t start) {
  WindowRecord w = sample(start);
  w.accounts.front().account = "slurm/42";
  w.accounts.front().labels = {"", "", "", "physics-dept", "alice", "physics"};
  for (auto& c : w.charges) c.account = "slurm/42";
  return w;
}

TEST_F(StoreTest, SlurmUserAndAccountRoundTripAndSchemaNineMigrates) {
  {
    Store store(path());
    ASSERT_TRUE(store.insert_window(slurm_job(0)));
    ASSERT_TRUE(store.insert_window(slurm_job(60)));
    EXPECT_EQ(store.windows(0, 120), (std::vector<WindowRecord>{slurm_job(0), slurm_job(60)}));
    const WindowRecord hour = merge_windows(store.windows(0, 120));
    EXPECT_EQ(hour.accounts.at(0).labels.slurm_user, "alice");
    EXPECT_EQ(hour.accounts.at(0).labels.slurm_account, "physics");
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "ALTER TABLE accounts DROP COLUMN slurm_user; ALTER TABLE accounts DROP COLUMN slurm_account;"
                           "PRAGMA user_version = 9;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  auto before_10 = [](WindowRecord w) {
    w.accounts.front().labels.slurm_user.clear();
    w.accounts.front().labels.slurm_account.clear();
    return w;
  };
  {
    Store report(path(), Store::Mode::kReadOnly);
    EXPECT_EQ(report.schema_version(), 9);
    EXPECT_EQ(report.windows(0, 120), (std::vector<WindowRecord>{before_10(slurm_job(0)), before_10(slurm_job(60))}));
  }
  Store store(path());
  EXPECT_EQ(store.schema_version(), 10);
  EXPECT_EQ(kStoreSchemaVersion, 10);
  EXPECT_EQ(store.windows(0, 120), (std::vector<WindowRecord>{before_10(slurm_job(0)), before_10(slurm_job(60))}));
  ASSERT_TRUE(store.insert_window(slurm_job(120)));
  EXPECT_EQ(store.windows(120, 180), std::vector<WindowRecord>{slurm_job(120)});
}

TEST(HourlyRollup, DeviceQualityCountsAndUseSecondsAdd) {
  std::vector<WindowRecord> ws = {judged(0, true), judged(60, false), judged(120, true), sample(180)};
  const WindowRecord m = merge_windows(ws);
  EXPECT_EQ(m.device_quality, (WindowRecord::DeviceQualityCounts{1, 2, 0}));
  EXPECT_EQ(m.device_findings, (std::map<std::string, int64_t>{{"gr_engine_active:zero_while_busy", 2},
                                                              {"sm_active:zero_while_busy", 2}}));
  ASSERT_EQ(m.accounts.size(), 1u);
  EXPECT_DOUBLE_EQ(*m.accounts[0].used_unallocated_seconds, 37.5);
  EXPECT_DOUBLE_EQ(*m.accounts[0].allocated_unused_seconds, 30);
  // None observed: unknown, not 0.
  EXPECT_FALSE(merge_windows({sample(0), sample(60)}).accounts[0].used_unallocated_seconds);
}

}  // namespace
}  // namespace gpuledger::ledger
