#include "ledger/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gl_store_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "ledger.db") const { return (dir_ / name).string(); }
  fs::path dir_;
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
                                    ": schema version 99 is newer than this gpuledger understands (1); use a newer "
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
