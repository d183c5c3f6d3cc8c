// The busy part of a shared window follows the best evidence of GPU time:
// NVML's per-process SM time, then eBPF spans, then launches, then VRAM
// (window_split.h); split_source says which, and a disagreement between NVML
// and the spans is flagged (NVML wins).
#include <gtest/gtest.h>

#include "ledger/split_source.h"
#include "ledger/window_split.h"

namespace gpuledger::ledger {
namespace {

using K = ChargeKind;

WindowInput shared(std::map<std::string, Activity> activity) {
  return {.cost_micros = 1'000'000, .window_seconds = 60, .holders = {{"a", 0.5}, {"b", 0.5}},
          .activity = std::move(activity), .device_busy_fraction = 0.8, .idle_policy = IdlePolicy::kHolders};
}

int64_t busy_of(const WindowSplit& s, const std::string& account) {
  for (const auto& c : s.charges)
    if (c.account == account && c.kind == K::kBusy) return c.micros;
  return 0;
}

TEST(BusySplitEvidence, NvmlSmTimeWinsOverSpansThatAnEvaderZeroed) {
  // b synchronises on another thread: its spans are 0, but NVML saw it run 3x a's SM time.
  Activity a{.busy_seconds = 40, .launches = 100, .nvml_sm_seconds = 12};
  Activity b{.busy_seconds = 0, .launches = 100, .nvml_sm_seconds = 36};
  const WindowSplit s = split_window(shared({{"a", a}, {"b", b}}));
  EXPECT_EQ(s.split_source, SplitSource::kNvml);
  EXPECT_EQ(s.busy_micros, 800'000);
  EXPECT_EQ(busy_of(s, "a"), 200'000);
  EXPECT_EQ(busy_of(s, "b"), 600'000);
  EXPECT_DOUBLE_EQ(s.activity_share.at("b"), 0.75);
  EXPECT_TRUE(s.split_disagreement);  // spans said a 100 %, NVML 25 %: 75 points
  EXPECT_DOUBLE_EQ(s.split_disagreement_points, 75);
}

TEST(BusySplitEvidence, AgreementWithinTenPointsIsNoDisagreement) {
  Activity a{.busy_seconds = 21, .nvml_sm_seconds = 10};  // spans 21/40 = 52.5 %, NVML 50 %
  Activity b{.busy_seconds = 19, .nvml_sm_seconds = 10};
  const WindowSplit s = split_window(shared({{"a", a}, {"b", b}}));
  EXPECT_EQ(s.split_source, SplitSource::kNvml);
  EXPECT_FALSE(s.split_disagreement);
  EXPECT_NEAR(s.split_disagreement_points, 2.5, 1e-9);
  EXPECT_EQ(busy_of(s, "a"), 400'000);
}

TEST(BusySplitEvidence, ANvmlOnlyProcessIsAUserTheSpansNeverSaw) {
  // A process whose launches the probes never saw (b) still ran on the GPU.
  const WindowSplit s = split_window(shared({{"a", {.busy_seconds = 30, .launches = 5, .nvml_sm_seconds = 10}},
                                             {"b", {.nvml_sm_seconds = 30}}}));
  EXPECT_EQ(s.split_source, SplitSource::kNvml);
  EXPECT_EQ(busy_of(s, "b"), 600'000);
}

TEST(BusySplitEvidence, PrecedenceWithoutNvmlIsSpansThenLaunchesThenVram) {
  EXPECT_EQ(split_window(shared({{"a", {.busy_seconds = 3, .launches = 1}}, {"b", {.launches = 9}}})).split_source,
            SplitSource::kSpans);
  const WindowSplit l = split_window(shared({{"a", {.launches = 1}}, {"b", {.launches = 3}}}));
  EXPECT_EQ(l.split_source, SplitSource::kLaunches);
  EXPECT_EQ(busy_of(l, "b"), 600'000);
  EXPECT_EQ(split_window(shared({{"a", {.vram_byte_seconds = 1e9}}})).split_source, SplitSource::kVram);
  EXPECT_EQ(split_window(shared({})).split_source, SplitSource::kNone);
}

TEST(BusySplitEvidence, NamesAreTheContract) {
  EXPECT_EQ(to_string(SplitSource::kNvml), "nvml");
  EXPECT_EQ(to_string(SplitSource::kSpans), "spans");
  EXPECT_EQ(to_string(SplitSource::kLaunches), "launches");
  EXPECT_EQ(to_string(SplitSource::kVram), "vram");
  EXPECT_EQ(to_string(SplitSource::kNone), "none");
  EXPECT_DOUBLE_EQ(largest_share_gap_points({{"a", 0.5}}, {{"b", 0.25}}), 50);
}

}  // namespace
}  // namespace gpuledger::ledger

// Schema 7: the window's split_source is stored; a schema 6 store gains the
// column ('' for the windows it had: reports say "unknown").
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "ledger/store.h"

namespace gpuledger::ledger {
namespace {

WindowRecord window_at(int64_t start, std::string split_source) {
  WindowRecord w;
  w.start = start;
  w.end = start + 60;
  w.slot = {"GPU-1", "H100", std::nullopt, ""};
  w.cost_micros = 100;
  w.busy_micros = 100;
  w.busy_fraction = 1;
  w.split_source = std::move(split_source);
  w.charges = {{"a", ChargeKind::kBusy, 60}, {"b", ChargeKind::kBusy, 40}};
  return w;
}

TEST(BusySplitEvidence, SplitSourceIsStoredAndASchemaSixStoreMigrates) {
  const auto dir = std::filesystem::temp_directory_path() / ("gl_split_store_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "ledger.db").string();
  {
    Store store(path);
    ASSERT_TRUE(store.insert_window(window_at(0, "nvml")));
  }
  {  // Back to schema 6, as a store written before this version.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "ALTER TABLE windows DROP COLUMN split_source; PRAGMA user_version = 6;", nullptr,
                           nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  {
    Store old(path, Store::Mode::kReadOnly);
    EXPECT_EQ(old.windows(0, 60).at(0).split_source, "");
  }
  Store store(path);
  EXPECT_GE(store.schema_version(), 7);
  EXPECT_EQ(store.windows(0, 60).at(0).split_source, "");
  ASSERT_TRUE(store.insert_window(window_at(60, "spans")));
  EXPECT_EQ(store.windows(60, 120).at(0).split_source, "spans");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::ledger
