#pragma once
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
// Without it, or where NVML samples one process per period, the window says
// it was split by spans.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "device/process_sm_time.h"
#include "ledger/store.h"
#include "../ledger/ledger_dir_test.h"
#include "node/observation_inputs.h"

namespace gpuledger::node {
namespace split_truth {
using namespace gpuledger::ledger;

constexpr int64_t kT0 = 1'800'000'000;  // aligned to 60 s
constexpr const char* kGpu = "GPU-shared";
constexpr long long kPeriodUs = 166'667;  // NVML's sampling period, about 1/6 s

// How a tenant waits for its work, as the probes see it: the span seconds it
// leaves per second of real work, and whether they all land at the end.
enum class Pattern { kSameThread, kOtherThread, kContextSync, kPolling, kNever, kOnceAtEnd, kGraphs, kStreams };
inline double spans_per_work(Pattern p) {
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
  std::string account;  // "__unattributed__": a GPU user of no workload (no holder, no snapshot entry)
  uint32_t pid;
  double rate;  // its mean share of the GPU's time
  Pattern pattern;
  // > 0: its work runs in processes of this many seconds each, one after the
  // other (pid, pid + 1, ...); 0: one process all along.
  double process_life_s = 0;
  // false: the probes never see it (a Vulkan or OpenCL user): no process in
  // the snapshot's views, no spans, no launches; its owner is known only from
  // /proc (AttributionSnapshot::other_processes, while it lives).
  bool probed = true;
};

// The pid running a tenant's work at `us`, and since when.
inline uint32_t pid_at(const Tenant& tn, long long start_us, long long us) {
  if (tn.process_life_s <= 0) return tn.pid;
  return tn.pid + static_cast<uint32_t>(static_cast<double>(us - start_us) / 1e6 / tn.process_life_s);
}

struct Truth {
  std::map<int64_t, std::map<std::string, double>> work;  // window start -> account -> real GPU seconds
};

class BusySplitTruth : public testing::LedgerDirTest {
 protected:
  BusySplitTruth() : LedgerDirTest("gl_split_truth_") {}

  // Runs `seconds` of the tenants on the GPU; returns the real work per window.
  // keep_exits: the snapshot has the exit records of the processes that ended
  // (attribution/exited_processes.h); false: as before them.
  Truth run(const std::vector<Tenant>& tenants, int seconds, bool nvml_per_process, bool keep_exits = true) {
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
      dev.gpus.back().process_samples_split = sm_time.splits_processes(kGpu);
      Observation o;
      o.time = t;
      o.slots = {{kGpu, "H100", std::nullopt, ""}};
      const long long now_us = std::llround(t * 1e6);
      size_t named = 0;
      for (const auto& tn : tenants) named += tn.account != kUnattributedAccount;
      for (const auto& tn : tenants) {
        if (tn.account == kUnattributedAccount) continue;  // nobody's: not held, not seen
        o.holders.push_back({kGpu, tn.account, {}, 1.0 / static_cast<double>(named)});
        const uint32_t now_pid = pid_at(tn, start_us, now_us);
        if (!tn.probed) {  // known from /proc only, while it runs
          snap.other_processes.push_back({now_pid, tn.account, false, static_cast<uint64_t>(start_us), 0});
          o.workloads.push_back({tn.account, {}, 0, 0, 0, {kGpu}, {}, {}});
          continue;
        }
        attribution::WorkloadView v;
        v.workload.id = tn.account;
        v.processes = {{now_pid, "train", 0}};
        snap.workloads.push_back(v);
        if (keep_exits)  // each process that ended: its exit record
          for (uint32_t pid = tn.pid; pid < now_pid; ++pid) {
            const auto from = static_cast<uint64_t>(start_us + std::llround((pid - tn.pid) * tn.process_life_s * 1e6));
            snap.other_processes.push_back(
                {pid, tn.account, false, from, from + static_cast<uint64_t>(std::llround(tn.process_life_s * 1e6))});
          }
        const double done = real_total[tn.account];
        // Spans closed at the end only: nothing until the last observation.
        double spans = tn.pattern == Pattern::kOnceAtEnd ? (t >= static_cast<double>(kT0 + seconds) ? done * 1.3 : 0)
                                                         : done * spans_per_work(tn.pattern);
        o.workloads.push_back({tn.account, {}, spans, static_cast<uint64_t>(launches[tn.account]), 0, {kGpu}, {}, {}});
      }
      o.device[kGpu].busy_fraction = busy_sum;
      o.process_sm = process_sm_uses(snap, dev);
      o.nvml_splits_processes = nvml_splits_processes(dev);
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
        if (one_sample_per_period_) {
          // As driver 580 on an H200: the period's one sample, given to the
          // tenant that ran most of it, says how busy the whole GPU was.
          const size_t top = std::max_element(occ.begin(), occ.end()) - occ.begin();
          buffer.push_back({pid_at(tenants[top], start_us, instant - kPeriodUs / 2),
                            static_cast<unsigned long long>(instant),
                            static_cast<unsigned>(std::lround(std::min(1.0, sum) * 100))});
        }
        for (size_t i = 0; i < tenants.size(); ++i) {
          const double seconds_run = occ[i] * kPeriodUs / 1e6;
          truth.work[window][tenants[i].account] += seconds_run;
          real_total[tenants[i].account] += seconds_run;
          if (tenants[i].probed && tenants[i].account != kUnattributedAccount) launches[tenants[i].account] += 7;
          if (!one_sample_per_period_)
            buffer.push_back({pid_at(tenants[i], start_us, instant - kPeriodUs / 2),
                              static_cast<unsigned long long>(instant), static_cast<unsigned>(std::lround(occ[i] * 100))});
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
        for (const auto& [pid, total] : sm_time.totals(kGpu))
          process_sm.push_back({kGpu, pid, total, sm_time.last_sample_us(kGpu, pid)});
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
  // NVML keeps one sample per period for the whole GPU (driver 580 on an H200).
  bool one_sample_per_period_ = false;
};

}  // namespace split_truth
}  // namespace gpuledger::node
