// The known-truth harness's tests (split_truth_fixture.h): every tenant's share
// of each window's busy cost is within 5 points of its share of the real work.
#include "split_truth_fixture.h"

namespace gpuledger::node {
namespace {
using namespace gpuledger::ledger;
using namespace split_truth;

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

// The H200's driver 580 gives each period to one process (here the tenant
// that ran most of it): the 4:1 pair's small tenant is never sampled, and by
// those samples would pay 0. NVML was never seen to sample two processes at
// once, so the spans split the GPU.
TEST_F(BusySplitTruth, ADriverThatSamplesOneProcessPerPeriodLeavesTheSplitToTheSpans) {
  one_sample_per_period_ = true;
  auto truth = run({{"small", 101, 0.18, Pattern::kSameThread}, {"large", 202, 0.72, Pattern::kContextSync}}, 180, true);
  expect_within(truth, 5, "spans");
  EXPECT_EQ(metrics_.find("gpuledger_ledger_split_disagreements_total{"), std::string::npos);
}

TEST(ProcessSmTime, SamplesTakingTurnsSayTheDriverSamplesOneProcessPerPeriod) {
  device::ProcessSmTime t;
  t.add("G", 0, {{1, 1'000'000, 80}, {1, 1'200'000, 80}});
  EXPECT_EQ(t.splits_processes("G"), std::nullopt) << "one process: nothing seen";
  t.add("G", 1'200'000, {{1, 1'400'000, 80}, {2, 1'600'000, 80}, {2, 1'800'000, 80}});
  EXPECT_EQ(t.splits_processes("G"), std::nullopt) << "a hand-over (1 ended, 2 began) says nothing";
  t.add("G", 1'800'000, {{2, 2'000'000, 80}, {3, 2'200'000, 80}, {2, 2'400'000, 80}});
  EXPECT_EQ(t.splits_processes("G"), false) << "2 and 3 took turns, never sampled at one instant";
  EXPECT_EQ(t.splits_processes("H"), std::nullopt);
  device::ProcessSmTime s;
  s.add("G", 0, {{1, 1'000'000, 50}, {2, 1'000'000, 25}});
  EXPECT_EQ(s.splits_processes("G"), true);
  s.add("G", 1'000'000, {{1, 1'200'000, 50}, {2, 1'400'000, 25}, {1, 1'600'000, 50}});
  EXPECT_EQ(s.splits_processes("G"), true) << "per process once seen: kept";
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

TEST(ProcessSmTime, TheNewestSampleOfEachPidIsKeptForItsOwner) {
  device::ProcessSmTime t;
  t.add("G", 0, {{1, 1'000'000, 50}, {2, 1'000'000, 25}, {1, 2'000'000, 50}});
  t.add("G", 2'000'000, {{2, 3'000'000, 10}});
  EXPECT_EQ(t.last_sample_us("G", 1), 2'000'000u);
  EXPECT_EQ(t.last_sample_us("G", 2), 3'000'000u);
  EXPECT_EQ(t.last_sample_us("G", 3), 0u);
  EXPECT_EQ(t.last_sample_us("H", 1), 0u);
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
  EXPECT_DOUBLE_EQ((d[{"G", "__unattributed__"}]), 2);
  EXPECT_DOUBLE_EQ(m.unattributed_seconds().at("G").seconds, 2);
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
