#include "ledger/accountant.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "ledger_dir_test.h"
#include "ledger_fixture.h"
#include "report/report.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;
using testing::accounted;
using testing::kT0;
using testing::Totals;

class AccountantTest : public testing::LedgerDirTest {
 protected:
  AccountantTest() : LedgerDirTest("gl_acct_") {}
  void SetUp() override {
    LedgerDirTest::SetUp();
    prices_ = parse_prices(testing::kFixturePrices);
  }
  PriceBook prices_;
};

int64_t sum_charges(const WindowRecord& w) {
  int64_t s = 0;
  for (const auto& c : w.charges) s += c.micros;
  return s;
}

// Every slot has exactly one window per 60 s from the first to the last, each adding up to its cost.
void expect_contiguous(const std::vector<WindowRecord>& ws, int64_t first, int64_t last_end) {
  std::map<std::string, std::vector<int64_t>> starts;
  for (const auto& w : ws) {
    EXPECT_EQ(sum_charges(w), w.cost_micros) << w.slot.uuid << " " << w.start;
    starts[w.slot.uuid].push_back(w.start);
  }
  EXPECT_EQ(starts.size(), 4u);
  for (const auto& [uuid, s] : starts) {
    std::vector<int64_t> want;
    for (int64_t t = first; t < last_end; t += 60) want.push_back(t);
    EXPECT_EQ(s, want) << uuid;
  }
}

TEST_F(AccountantTest, EndToEndReportMatchesHandComputation) {
  Store store(db());
  Accountant acc(store, prices_);
  testing::run_fixture(acc, 0, 120);
  EXPECT_EQ(acc.windows_written(), 8u);
  auto ws = store.windows(kT0, kT0 + 120);
  ASSERT_EQ(ws.size(), 8u);
  expect_contiguous(ws, kT0, kT0 + 120);
  const WindowRecord& shared = ws[1];
  ASSERT_EQ(shared.slot.uuid, "GPU-shared");
  EXPECT_EQ(shared.source, "live");
  EXPECT_EQ(shared.busy_source, "device");
  EXPECT_EQ(shared.charges, (std::vector<Charge>{{"k8s/pod-a", ChargeKind::kBusy, 27'000},
                                                 {"k8s/pod-a", ChargeKind::kIdle, 12'000},
                                                 {"k8s/pod-b", ChargeKind::kBusy, 9'000},
                                                 {"k8s/pod-b", ChargeKind::kIdle, 12'000}}));
  ASSERT_EQ(shared.accounts.size(), 2u);
  EXPECT_DOUBLE_EQ(shared.accounts[0].busy_seconds, 30);
  EXPECT_EQ(shared.accounts[0].launches, 600u);
  EXPECT_DOUBLE_EQ(shared.accounts[0].vram_byte_seconds, 60.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(*shared.accounts[0].efficiency.sm_active, 0.5 * 0.75);  // apportioned
  EXPECT_FALSE(shared.accounts[0].efficiency.tensor_active);                // unknown
  EXPECT_EQ(ws[0].charges, (std::vector<Charge>{{"k8s/pod-c", ChargeKind::kBusy, 45'000},
                                                {"k8s/pod-c", ChargeKind::kIdle, 15'000}}));
  EXPECT_FALSE(ws[0].accounts[0].efficiency.sm_active);  // no device source: unknown
  EXPECT_EQ(ws[2].charges, (std::vector<Charge>{{"__unallocated__", ChargeKind::kIdle, 30'000}}));
  EXPECT_EQ(ws[3].charges, (std::vector<Charge>{{"k8s/pod-d", ChargeKind::kIdle, 25'714}}));
  EXPECT_DOUBLE_EQ(ws[3].gpu_fraction, 3.0 / 7.0);

  auto r = report::build_report(store.windows(kT0, kT0 + 120), kT0, kT0 + 120, report::GroupBy::kTeam);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].key, "vision");
  EXPECT_EQ(r.rows[0].cost_busy_micros, 144'000);
  EXPECT_EQ(r.rows[0].cost_idle_micros, 54'000);
  EXPECT_EQ(r.rows[1].key, "nlp");
  EXPECT_EQ(r.rows[1].cost_busy_micros, 18'000);
  EXPECT_EQ(r.rows[1].cost_idle_micros, 75'429);
  EXPECT_EQ(r.rows[2].key, "__unallocated__");
  EXPECT_EQ(r.rows[2].cost_idle_micros, 60'000);
  EXPECT_EQ(r.total.cost_total_micros(), 351'429);
  // vision held half of GPU-shared and all of GPU-excl for 120 s: 180 GPU-seconds.
  EXPECT_NEAR(r.rows[0].gpu_hours_held, 180.0 / 3600, 1e-12);
  // busy: 0.6*60*0.75 + 45 per window.
  EXPECT_NEAR(r.rows[0].gpu_hours_busy, 2 * (27.0 + 45.0) / 3600, 1e-12);
}

TEST_F(AccountantTest, RestartInTheMiddleOfAWindow) {
  {
    Store store(db());
    Accountant a(store, prices_);
    testing::run_fixture(a, 0, 80);  // window 0 written; crash at +80 in window 1
    EXPECT_EQ(store.windows(kT0, kT0 + 1000).size(), 4u);
  }
  Store store(db());
  Accountant b(store, prices_);
  testing::run_fixture(b, 100, 180);
  auto ws = store.windows(kT0, kT0 + 1000);
  ASSERT_EQ(ws.size(), 12u);
  expect_contiguous(ws, kT0, kT0 + 180);
  for (const auto& w : ws) {
    if (w.start == kT0 + 60) {
      EXPECT_EQ(w.source, "partial");
      EXPECT_DOUBLE_EQ(w.observed_seconds, 20);
    } else {
      EXPECT_EQ(w.source, "live");
    }
  }
  // The partial window charges the full cost; its activity is what b saw (+100..+120).
  for (const auto& w : ws)
    if (w.start == kT0 + 60 && w.slot.uuid == "GPU-excl") {
      EXPECT_EQ(w.cost_micros, 60'000);
      EXPECT_DOUBLE_EQ(w.accounts[0].busy_seconds, 0.75 * 20);  // the +110 and +120 deltas
    }
  // The exported counters continue from the store (restart does not reset them).
  metrics::ExpositionWriter out;
  b.write_metrics(out);
  EXPECT_NE(out.text().find("gpuledger_cost_total{namespace=\"\",pod=\"\",container=\"\",team=\"__unallocated__\","
                            "UUID=\"GPU-t4\",kind=\"idle\"} 0.09\n"),
            std::string::npos)
      << out.text();
}

// Issue 10: SIGTERM lost the window in progress (stored after the restart as
// all idle). A graceful stop stores what was watched of it; an agent restarted
// within it counts the rest of it in the next window: every launch once.
TEST_F(AccountantTest, AGracefulStopStoresTheWindowInProgress) {
  {
    Store store(db());
    Accountant a(store, prices_);
    testing::run_fixture(a, 0, 80);
    a.store_window_in_progress();  // SIGTERM at +80, in window 1
    auto ws = store.windows(kT0 + 60, kT0 + 120);
    ASSERT_EQ(ws.size(), 4u);
    for (const auto& w : ws) {
      EXPECT_EQ(w.source, "partial");
      EXPECT_DOUBLE_EQ(w.observed_seconds, 20);
      EXPECT_EQ(sum_charges(w), w.cost_micros);
      if (w.slot.uuid == "GPU-excl") {
        EXPECT_EQ(w.charges, (std::vector<Charge>{{"k8s/pod-c", ChargeKind::kBusy, 15'000},
                                                  {"k8s/pod-c", ChargeKind::kIdle, 45'000}}));
        EXPECT_DOUBLE_EQ(w.accounts[0].busy_seconds, 0.75 * 20);
        EXPECT_EQ(w.accounts[0].launches, 20u);
      }
    }
  }
  Store store(db());
  Accountant b(store, prices_);
  testing::run_fixture(b, 100, 180);  // restarted within window 1
  auto ws = store.windows(kT0, kT0 + 1000);
  ASSERT_EQ(ws.size(), 12u);
  expect_contiguous(ws, kT0, kT0 + 180);
  uint64_t launches = 0;
  for (const auto& w : ws) {
    if (w.slot.uuid != "GPU-excl") continue;
    launches += w.accounts[0].launches;
    if (w.start == kT0 + 60) {
      EXPECT_DOUBLE_EQ(w.observed_seconds, 20) << "stored once, at the stop";
    }
    if (w.start == kT0 + 120) {
      EXPECT_EQ(w.source, "live");
      EXPECT_EQ(w.accounts[0].launches, 80u) << "+100..+120 carried into the next window";
    }
  }
  EXPECT_EQ(launches, 80u + 80u) << "all that either agent saw, once";
}

// Issue 10: the counters the stored windows were charged up to are stored
// with them. An agent that adopted the same kernel counters (the same counter
// set) after a crash at +80 charges what was counted since window 0 was stored
// (+60..+100: the tail the crash cut off and the downtime) in its first
// window; after a graceful stop, what followed the stored window. Another
// counter set (counters restarted) or none: as before, from the first observation.
struct BaselineCase {
  std::string before, after;  // counter sets of the two agents
  bool graceful;
  uint64_t pod_a_launches;  // 10 a second, observed 0..180
  std::string name;
  friend void PrintTo(const BaselineCase& c, std::ostream* os) { *os << c.name; }
};
class AccountantBaselineTest : public AccountantTest, public ::testing::WithParamInterface<BaselineCase> {};

TEST_P(AccountantBaselineTest, ARestartChargesWhatTheAdoptedCountersCountedOnce) {
  const BaselineCase& c = GetParam();
  {
    Store store(db());
    Accountant a(store, prices_);
    a.set_counter_set(c.before);
    testing::run_fixture(a, 0, 80);
    if (c.graceful) a.store_window_in_progress();
  }
  Store store(db());
  Accountant b(store, prices_);
  b.set_counter_set(c.after);
  testing::run_fixture(b, 100, 180);
  auto ws = store.windows(kT0, kT0 + 1000);
  ASSERT_EQ(ws.size(), 12u);
  expect_contiguous(ws, kT0, kT0 + 180);
  uint64_t launches = 0;
  for (const auto& w : ws)
    for (const auto& a : w.accounts)
      if (a.account == "k8s/pod-a") launches += a.launches;
  EXPECT_EQ(launches, c.pod_a_launches);
  EXPECT_EQ(store.counter_baseline()->counter_set, c.after);
  EXPECT_EQ(store.counter_baseline()->accounts.at("k8s/pod-a").launches, 1800u) << "charged up to +180";
}

INSTANTIATE_TEST_SUITE_P(
    Restarts, AccountantBaselineTest,
    ::testing::Values(BaselineCase{"boot/7", "boot/7", false, 1800, "CrashSameCounters"},  // +60..+100 after it
                      BaselineCase{"boot/7", "boot/7", true, 1800, "StopSameCounters"},    // +80..+100 after it
                      BaselineCase{"boot/7", "boot/8", false, 1400, "CrashNewCounters"},   // not +60..+100
                      BaselineCase{"", "", false, 1400, "CrashUnpinned"},
                      BaselineCase{"boot/7", "boot/8", true, 1600, "StopNewCounters"},  // not +80..+100
                      BaselineCase{"", "boot/7", false, 1400, "BaselineOfUnpinnedCounters"}),
    [](const auto& info) { return info.param.name; });

TEST_F(AccountantTest, DowntimeIsBackfilledWithoutGaps) {
  {
    Store store(db());
    Accountant a(store, prices_);
    testing::run_fixture(a, 0, 60);
  }
  Store store(db());
  Accountant b(store, prices_);
  testing::run_fixture(b, 250, 300);
  auto ws = store.windows(kT0, kT0 + 1000);
  expect_contiguous(ws, kT0, kT0 + 300);
  for (const auto& w : ws) {
    if (w.start >= kT0 + 60 && w.start < kT0 + 240) {
      EXPECT_EQ(w.source, "backfill");
    }
    if (w.start == kT0 + 240) {
      EXPECT_EQ(w.source, "partial");
    }
  }
}

TEST_F(AccountantTest, ReplayOfStoredWindowsDoesNotDoubleCount) {
  {
    Store store(db());
    Accountant a(store, prices_);
    testing::run_fixture(a, 0, 120);
  }
  Store store(db());
  Accountant b(store, prices_);
  testing::run_fixture(b, 30, 130);  // a clock that went back into stored windows
  auto ws = store.windows(kT0, kT0 + 1000);
  ASSERT_EQ(ws.size(), 8u);
  EXPECT_EQ(b.windows_written(), 0u);
  expect_contiguous(ws, kT0, kT0 + 120);
}

TEST_F(AccountantTest, MetricsFamilies) {
  Store store(db());
  Accountant acc(store, prices_);
  testing::run_fixture(acc, 0, 60);
  metrics::ExpositionWriter out;
  acc.write_metrics(out);
  const std::string& t = out.text();
  EXPECT_NE(t.find("# TYPE gpuledger_cost_total counter\n"), std::string::npos);
  EXPECT_NE(t.find("gpuledger_cost_total{namespace=\"ml\",pod=\"pod-a\",container=\"main\",team=\"vision\","
                   "UUID=\"GPU-shared\",kind=\"busy\"} 0.027\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("gpuledger_gpu_busy_seconds_total{UUID=\"GPU-shared\"} 36\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gpuledger_gpu_share_ratio{namespace=\"ml\",pod=\"pod-a\",container=\"main\",team=\"vision\","
                   "UUID=\"GPU-shared\"} 0.65\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("gpuledger_gpu_share_ratio{namespace=\"ml\",pod=\"pod-c\",container=\"main\",team=\"vision\","
                   "UUID=\"GPU-excl\"} 1\n"),
            std::string::npos)
      << t;
}

TEST(AccountWindow, NonHolderUsersOfAReservedGpu) {
  PriceBook prices = parse_prices("default_per_hour: 0.06\n");  // 1'000 per 60 s
  SlotWindow sw;
  sw.slot = {"GPU-1", "x", std::nullopt, ""};
  sw.holders = {{"GPU-1", "k8s/reservation", {}, 1}};
  sw.activity = {{"k8s/real", Activity{15, 0, 5}}};
  WindowRecord r = account_window(prices, 0, 60, sw, 60, "live");
  EXPECT_EQ(r.cost_micros, 1'000);
  EXPECT_EQ(r.charges, (std::vector<Charge>{{"k8s/real", ChargeKind::kBusy, 250},
                                            {"k8s/reservation", ChargeKind::kIdle, 750}}));
}

TEST_F(AccountantTest, PerSlotUsageGoesToItsSlot) {
  prices_ = parse_prices("default_per_hour: 0.06\n");  // 1'000 per 60 s
  Store store(db());
  Accountant acc(store, prices_);
  auto obs = [&](double t) {
    Observation o;
    o.time = static_cast<double>(kT0) + t;
    o.slots = {{"GPU-0", "x", std::nullopt, ""}, {"GPU-1", "x", std::nullopt, ""}};
    WorkloadUsage w;
    w.account = "job";
    w.busy_seconds = t * 0.75;  // 0.25/s on GPU-0, 0.25/s on GPU-1, 0.25/s on an unknown device
    w.launches = static_cast<uint64_t>(t) * 3;
    w.by_slot["GPU-0"] = {t * 0.25, static_cast<uint64_t>(t), 0};
    w.by_slot["GPU-1"] = {t * 0.25, static_cast<uint64_t>(t), 0};
    w.slots = {"GPU-1"};  // the rest: NVML says it runs on GPU-1
    o.workloads = {w};
    return o;
  };
  for (int t = 0; t <= 60; t += 10) acc.observe(obs(t));
  auto ws = store.windows(kT0, kT0 + 60);
  ASSERT_EQ(ws.size(), 2u);
  auto job = [](const WindowRecord& w) {
    for (const auto& a : w.accounts)
      if (a.account == "job") return a;
    return AccountRecord{};
  };
  EXPECT_DOUBLE_EQ(job(ws[0]).busy_seconds, 15);
  EXPECT_EQ(job(ws[0]).launches, 60u);
  EXPECT_DOUBLE_EQ(job(ws[1]).busy_seconds, 30);
  EXPECT_EQ(job(ws[1]).launches, 120u);
  // No holder: the user pays its busy part, the rest is unallocated.
  EXPECT_EQ(ws[0].charges, (std::vector<Charge>{{"__unallocated__", ChargeKind::kIdle, 750},
                                                {"job", ChargeKind::kBusy, 250}}));
  EXPECT_EQ(acc.unattributed_workloads(), 0u);
}

}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

TEST_F(AccountantTest, RetentionDeletesOldWindows) {
  prices_.retention_days = 1;
  Store store(db());
  Accountant acc(store, prices_);
  testing::run_fixture(acc, 0, 60);  // window 0
  // Two days later (the gap is beyond max_backfill: only the last day is backfilled).
  testing::run_fixture(acc, 2 * 86400, 2 * 86400 + 60);
  auto ws = store.windows(0, kT0 + 3 * 86400);
  ASSERT_FALSE(ws.empty());
  EXPECT_GE(ws.front().end, kT0 + 86400);  // window 0 is gone
  EXPECT_EQ(ws.front().source, "gap");      // the agent stalled for two days
  EXPECT_EQ(ws.back().source, "live");
}

TEST_F(AccountantTest, OldWindowsAreRolledUpToHoursWithTheSameBill) {
  prices_.rollup_after_hours = 1;
  Store store(db());
  Accountant acc(store, prices_);
  testing::run_fixture(acc, 0, 2 * 3600);  // two hours of 60 s windows
  const int64_t before = report::build_report(store, kT0, kT0 + 3 * 3600, report::GroupBy::kPod).total.cost_total_micros();
  const size_t windows_before = store.windows(kT0, kT0 + 3600).size();
  testing::run_fixture(acc, 2 * 3600, 3 * 3600 + 60);  // an hour later the first hour is older than 1 h
  auto first_hour = store.windows(kT0, kT0 + 3600);
  ASSERT_FALSE(first_hour.empty());
  EXPECT_LT(first_hour.size(), windows_before);
  EXPECT_EQ(first_hour.front().end - first_hour.front().start, 3600);
  EXPECT_EQ(report::build_report(store, kT0, kT0 + 2 * 3600, report::GroupBy::kPod).total.cost_total_micros(),
            before);
}


}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

std::string cost_lines(const Accountant& acc) {
  metrics::ExpositionWriter out;
  acc.write_metrics(out);
  std::string lines;
  std::istringstream in(out.text());
  for (std::string l; std::getline(in, l);)
    if (l.rfind("gpuledger_cost_total{", 0) == 0 || l.rfind("gpuledger_gpu_busy_seconds_total{", 0) == 0)
      lines += l + "\n";
  return lines;
}

TEST_F(AccountantTest, CountersAfterARestartEqualTheLiveOnes) {
  Store store(db());
  Accountant live(store, prices_);
  testing::run_fixture(live, 0, 180);
  Accountant restarted(store, prices_);
  EXPECT_FALSE(cost_lines(live).empty());
  EXPECT_EQ(cost_lines(restarted), cost_lines(live));
}

}  // namespace
}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
namespace {

TEST_F(AccountantTest, OutsideKubernetesTheUsersHoldTheGpu) {
  prices_ = parse_prices("default_per_hour: 0.06\n");  // 1'000 per 60 s
  Store store(db());
  Accountant acc(store, prices_);
  for (int t = 0; t <= 60; t += 10) {
    Observation o;
    o.time = static_cast<double>(kT0) + t;
    o.allocation_known = false;
    o.slots = {{"GPU-0", "x", std::nullopt, ""}};
    WorkloadUsage a, b;
    a.account = "systemd/trainer.service";
    a.busy_seconds = t * 0.3;  // 18 s per window
    b.account = "slurm/42";
    b.busy_seconds = t * 0.1;  // 6 s
    o.workloads = {a, b};
    acc.observe(o);
  }
  auto ws = store.windows(kT0, kT0 + 60);
  ASSERT_EQ(ws.size(), 1u);
  // busy 24/60 of 1'000 = 400, split 3:1; idle 600 split between the two users.
  EXPECT_EQ(ws[0].charges, (std::vector<Charge>{{"slurm/42", ChargeKind::kBusy, 100},
                                                {"slurm/42", ChargeKind::kIdle, 300},
                                                {"systemd/trainer.service", ChargeKind::kBusy, 300},
                                                {"systemd/trainer.service", ChargeKind::kIdle, 300}}));
}

}  // namespace
}  // namespace gpuledger::ledger
