// Known truth: tenants on one time-sliced GPU, each running a known amount of
// real work, calling the API as they please. NVML's per-process samples are
// generated from the work each tenant really ran; the eBPF spans are what the
// calling pattern lets them be (0 for a tenant that synchronises on another
// thread or never, everything in the last window for one that synchronises
// once at the end). The samples go through the NVML client's integration
// (device/process_sm_time.h, polled every 2 s with its last-seen cursor), the
// agent's inputs (process_sm_uses) and the accountant (observed every 5 s):
// with per-process data every tenant's share of each window's busy cost is
// within 5 points of its share of the real work, whatever its calling pattern.
// Without it the window says it was split by spans.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "device/process_sm_time.h"
#include "ledger/store.h"
#include "../ledger/ledger_dir_test.h"
#include "node/observation_inputs.h"

namespace gpuledger::node {
namespace {
using namespace gpuledger::ledger;

constexpr int64_t kT0 = 1'800'000'000;  // aligned to 60 s
constexpr const char* kGpu = "GPU-shared";
constexpr long long kPeriodUs = 166'667;  // NVML's sampling period, about 1/6 s

// How a tenant waits for its work, as the probes see it: the span seconds it
// leaves per second of real work, and whether they all land at the end.
enum class Pattern { kSameThread, kOtherThread, kContextSync, kPolling, kNever, kOnceAtEnd, kGraphs, kStreams };
double spans_per_work(Pattern p) {
  switch (p) {
    case Pattern::kOtherThread:
    case Pattern::kNever:
      return 0;    // the old per-thread spans never closed: 0
    case Pattern::kPolling:
      return 0.2;  // closed only by the last successful query of each burst
    default:
      return 1.3;  // launch to sync: the work and the co-tenants' slices between
  }
}

struct Tenant {
  std::string account;
  uint32_t pid;
  double rate;  // its mean share of the GPU's time
  Pattern pattern;
};

struct Truth {
  std::map<int64_t, std::map<std::string, double>> work;  // window start -> account -> real GPU seconds
};

class BusySplitTruth : public testing::LedgerDirTest {
 protected:
  BusySplitTruth() : LedgerDirTest("gl_split_truth_") {}

  // Runs `seconds` of the tenants on the GPU; returns the real work per window.
  Truth run(const std::vector<Tenant>& tenants, int seconds, bool nvml_per_process) {
    Store store(db());
    PriceBook prices = parse_prices("currency: USD\ndefault_per_hour: 3.60\nwindow_seconds: 60\n");
    Accountant acc(store, prices);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    Truth truth;
    std::vector<device::ProcessSmTime::Sample> buffer;  // NVML's sample buffer since the last poll
    device::ProcessSmTime sm_time;
    unsigned long long cursor = 0;
    std::vector<device::ProcessSmReading> process_sm;
    std::map<std::string, double> real_total, launches;
    double busy_sum = 0;
    const long long start_us = kT0 * 1'000'000LL, end_us = (kT0 + seconds) * 1'000'000LL;
    long long next_poll = start_us, next_obs = start_us, instant = start_us + kPeriodUs;
    auto observe = [&](double t) {
      attribution::AttributionSnapshot snap;
      device::DeviceSnapshot dev;
      dev.gpus.push_back({.index = 0, .uuid = kGpu, .model = "H100", .mig_enabled = false});
      if (nvml_per_process) dev.process_sm = process_sm;
      Observation o;
      o.time = t;
      o.slots = {{kGpu, "H100", std::nullopt, ""}};
      for (const auto& tn : tenants) {
        o.holders.push_back({kGpu, tn.account, {}, 1.0 / static_cast<double>(tenants.size())});
        attribution::WorkloadView v;
        v.workload.id = tn.account;
        v.processes = {{tn.pid, "train", 0}};
        snap.workloads.push_back(v);
        const double done = real_total[tn.account];
        // Spans closed at the end only: nothing until the last observation.
        double spans = tn.pattern == Pattern::kOnceAtEnd ? (t >= static_cast<double>(kT0 + seconds) ? done * 1.3 : 0)
                                                         : done * spans_per_work(tn.pattern);
        o.workloads.push_back({tn.account, {}, spans, static_cast<uint64_t>(launches[tn.account]), 0, {kGpu}, {}, {}});
      }
      o.device[kGpu].busy_fraction = busy_sum;
      o.process_sm = process_sm_uses(snap, dev);
      acc.observe(o);
    };
    for (double r : [&] { std::vector<double> v; for (auto& tn : tenants) v.push_back(tn.rate); return v; }()) busy_sum += r;
    for (long long now = start_us; now <= end_us; now += 10'000) {  // 10 ms steps
      for (; instant <= now; instant += kPeriodUs) {
        // One sampling period of the time-sliced GPU: each tenant's occupancy.
        std::vector<double> occ;
        double sum = 0;
        for (const auto& tn : tenants) sum += occ.emplace_back(tn.rate * jitter(rng));
        if (sum > 1) for (double& o : occ) o /= sum;
        const int64_t window = (instant - kPeriodUs) / 1'000'000 / 60 * 60;  // the period's start's window
        for (size_t i = 0; i < tenants.size(); ++i) {
          const double seconds_run = occ[i] * kPeriodUs / 1e6;
          truth.work[window][tenants[i].account] += seconds_run;
          real_total[tenants[i].account] += seconds_run;
          launches[tenants[i].account] += 7;
          buffer.push_back({tenants[i].pid, static_cast<unsigned long long>(instant),
                            static_cast<unsigned>(std::lround(occ[i] * 100))});
        }
      }
      if (now >= next_poll) {  // the device plane's NVML poll
        std::vector<device::ProcessSmTime::Sample> fresh;
        for (const auto& s : buffer)
          if (s.timestamp_us > cursor) fresh.push_back(s);
        sm_time.add(kGpu, cursor, fresh);
        for (const auto& s : fresh) cursor = std::max(cursor, s.timestamp_us);
        buffer.clear();
        process_sm.clear();
        for (const auto& [pid, total] : sm_time.totals(kGpu)) process_sm.push_back({kGpu, pid, total});
        next_poll += 2'000'000;
      }
      if (now >= next_obs) {
        observe(static_cast<double>(now) / 1e6);
        next_obs += 5'000'000;
      }
    }
    windows_ = store.windows(kT0, kT0 + seconds);
    metrics::ExpositionWriter out;
    acc.write_metrics(out);
    metrics_ = out.text();
    return truth;
  }

  // Every full window: each tenant's share of the busy cost against its share of the work.
  void expect_within(const Truth& truth, double points, const std::string& source) {
    ASSERT_FALSE(windows_.empty());
    double worst = 0;
    for (const auto& w : windows_) {
      EXPECT_EQ(w.split_source, source) << w.start;
      ASSERT_GT(w.busy_micros, 0);
      double real_sum = 0;
      for (const auto& [a, s] : truth.work.at(w.start)) real_sum += s;
      for (const auto& [account, real] : truth.work.at(w.start)) {
        int64_t busy = 0;
        for (const auto& c : w.charges)
          if (c.account == account && c.kind == ChargeKind::kBusy) busy += c.micros;
        const double billed = static_cast<double>(busy) / static_cast<double>(w.busy_micros);
        EXPECT_NEAR(billed * 100, real / real_sum * 100, points) << account << " in the window from " << w.start;
        worst = std::max(worst, std::fabs(billed - real / real_sum) * 100);
      }
    }
    std::printf("[ truth    ] %zu windows split by %s: the largest gap between a tenant's share of the busy cost "
                "and of the real work is %.2f points\n",
                windows_.size(), source.c_str(), worst);
  }
  std::vector<WindowRecord> windows_;
  std::string metrics_;
};

TEST_F(BusySplitTruth, TwoTenantsEachPatternWithNvmlWithinFivePoints) {
  for (Pattern evader : {Pattern::kSameThread, Pattern::kOtherThread, Pattern::kContextSync, Pattern::kPolling,
                         Pattern::kNever, Pattern::kOnceAtEnd, Pattern::kGraphs, Pattern::kStreams}) {
    SCOPED_TRACE(static_cast<int>(evader));
    auto truth = run({{"honest", 101, 0.435, Pattern::kSameThread}, {"evader", 202, 0.435, evader}}, 180, true);
    expect_within(truth, 5, "nvml");
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
}

TEST_F(BusySplitTruth, FourTimesTheWorkNeverSynchronisedPaysItsEightyPercent) {
  auto truth = run({{"honest", 101, 0.18, Pattern::kSameThread}, {"evader", 202, 0.72, Pattern::kNever}}, 180, true);
  expect_within(truth, 5, "nvml");
  // What split each window, and that the spans told another story (the evader's were 0).
  EXPECT_NE(metrics_.find("gpuledger_ledger_split_windows_total{UUID=\"GPU-shared\",split_source=\"nvml\"} 3\n"),
            std::string::npos)
      << metrics_;
  EXPECT_NE(metrics_.find("gpuledger_ledger_split_disagreements_total{UUID=\"GPU-shared\"} 3\n"), std::string::npos);
}

TEST_F(BusySplitTruth, ThreeTenantsMixedPatternsWithNvmlWithinFivePoints) {
  auto truth = run({{"a", 101, 0.15, Pattern::kOtherThread},
                    {"b", 202, 0.30, Pattern::kOnceAtEnd},
                    {"c", 303, 0.45, Pattern::kPolling}},
                   180, true);
  expect_within(truth, 5, "nvml");
}

TEST_F(BusySplitTruth, WithoutPerProcessDataTheWindowSaysSpansSplitIt) {
  run({{"honest", 101, 0.435, Pattern::kSameThread}, {"waiter", 202, 0.435, Pattern::kContextSync}}, 120, false);
  ASSERT_EQ(windows_.size(), 2u);
  for (const auto& w : windows_) EXPECT_EQ(w.split_source, "spans");
  EXPECT_EQ(metrics_.find("gpuledger_ledger_split_disagreements_total{"), std::string::npos);
}

TEST(ProcessSmTime, EachSampleCountsOnceAtTheDevicePeriod) {
  device::ProcessSmTime t;
  // Two reads: 1 s apart samples, 50 % and 25 %.
  t.add("G", 0, {{1, 1'000'000, 50}, {2, 1'000'000, 25}, {1, 2'000'000, 50}, {2, 2'000'000, 25}});
  t.add("G", 2'000'000, {{1, 3'000'000, 100}});  // one instant: the device's last period (1 s)
  t.add("G", 3'000'000, {});
  auto totals = t.totals("G");
  EXPECT_DOUBLE_EQ(totals.at(1), 0.5 + 0.5 + 1.0);
  EXPECT_DOUBLE_EQ(totals.at(2), 0.25 + 0.25);
}

TEST(ProcessSmTime, AProcessWithoutSamplesIsKeptAWhileThenDropped) {
  device::ProcessSmTime t;
  t.add("G", 0, {{1, 1'000'000, 50}, {1, 2'000'000, 50}});
  for (unsigned i = 0; i < device::ProcessSmTime::kKeepPolls; ++i) ASSERT_TRUE(t.totals("G").contains(1)) << i;
  EXPECT_FALSE(t.totals("G").contains(1));
}

TEST(ProcessSmMeter, DeltasPerAccountAndAnExitedProcessKeepsItsOwner) {
  ProcessSmMeter m;
  EXPECT_TRUE(m.take({{"G", 1, "a", 5}, {"G", 2, "b", 1}}).empty());  // the baseline
  auto d = m.take({{"G", 1, "a", 7}, {"G", 2, "", 4}, {"G", 3, "", 2}});  // 2 exited: still b's; 3 nobody's
  EXPECT_DOUBLE_EQ((d[{"G", "a"}]), 2);
  EXPECT_DOUBLE_EQ((d[{"G", "b"}]), 3);
  EXPECT_DOUBLE_EQ(m.foreign_seconds(), 2);
  d = m.take({{"G", 1, "c", 1}});  // pid 1 reused (its total went down): from 0
  EXPECT_DOUBLE_EQ((d[{"G", "c"}]), 1);
}

TEST(ProcessSmUses, MigAndMpsGpusAndInfrastructureAreLeftOut) {
  attribution::AttributionSnapshot snap;
  attribution::WorkloadView a, mps;
  a.workload.id = "a";
  a.processes = {{1, "x", 0}, {2, "x", 0}};
  mps.workload.id = "mps";
  mps.infrastructure = true;
  mps.processes = {{9, "nvidia-cuda-mps-server", 0}};
  snap.workloads = {a, mps};
  device::DeviceSnapshot dev;
  dev.gpus = {{.uuid = "GPU-a", .mig_enabled = false}, {.uuid = "GPU-mig", .mig_enabled = true}, {.uuid = "GPU-mps"}};
  dev.processes = {{.pid = 2, .gpu_uuid = "GPU-mps", .mps = true}};
  dev.process_sm = {{"GPU-a", 1, 3}, {"GPU-a", 9, 4}, {"GPU-a", 5, 1}, {"GPU-mig", 1, 2}, {"GPU-mps", 2, 2}};
  const auto uses = process_sm_uses(snap, dev);
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0].account, "a");
  EXPECT_EQ(uses[1].account, "");  // pid 5: no workload's (foreign)
}

}  // namespace
}  // namespace gpuledger::node
