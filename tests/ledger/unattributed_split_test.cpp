// NVML time of processes no workload could be named for (__unattributed__,
// window_split.h): a user like any other, so it is never spread over the named
// users; when it is most of the window's NVML time (over
// kUnattributedFallbackShare), the next evidence splits the window and
// split_source says so.
#include <gtest/gtest.h>

#include "ledger/split_source.h"
#include "ledger/window_split.h"

namespace gpuledger::ledger {
namespace {

const std::string kU(kUnattributedAccount);

WindowInput shared(std::map<std::string, Activity> activity) {
  return {.cost_micros = 1'000'000, .window_seconds = 60, .holders = {{"a", 0.5}, {"b", 0.5}},
          .activity = std::move(activity), .device_busy_fraction = 0.8, .idle_policy = IdlePolicy::kHolders};
}

int64_t busy_of(const WindowSplit& s, const std::string& account) {
  for (const auto& c : s.charges)
    if (c.account == account && c.kind == ChargeKind::kBusy) return c.micros;
  return 0;
}

TEST(UnattributedSplit, AFewUnattributedSecondsKeepTheirShareAwayFromTheNamed) {
  // 5 of 25 NVML seconds (20 %) nobody's: a and b pay their own 10 each, no more.
  const WindowSplit s = split_window(shared({{"a", {.nvml_sm_seconds = 10}}, {"b", {.nvml_sm_seconds = 10}},
                                             {kU, {.nvml_sm_seconds = 5}}}));
  EXPECT_EQ(s.split_source, SplitSource::kNvml);
  EXPECT_EQ(busy_of(s, "a"), 320'000);
  EXPECT_EQ(busy_of(s, "b"), 320'000);
  EXPECT_EQ(busy_of(s, kU), 160'000);
  EXPECT_EQ(s.idle_micros, 200'000);  // the idle part still goes by the idle policy (holders)
}

TEST(UnattributedSplit, ExactlyAQuarterIsStillNvmlsSplit) {
  const WindowSplit s = split_window(shared({{"a", {.busy_seconds = 50, .nvml_sm_seconds = 3}},
                                             {"b", {.nvml_sm_seconds = 3}}, {kU, {.nvml_sm_seconds = 2}}}));
  EXPECT_EQ(s.split_source, SplitSource::kNvml);
  EXPECT_EQ(busy_of(s, kU), 200'000);
}

TEST(UnattributedSplit, MostlyUnattributedFallsBackToTheSpansAndSaysSo) {
  // 9 of 10 NVML seconds nobody's: NVML cannot tell who of a and b ran what; the spans can.
  const WindowSplit s = split_window(shared({{"a", {.busy_seconds = 30, .nvml_sm_seconds = 1}},
                                             {"b", {.busy_seconds = 10}}, {kU, {.nvml_sm_seconds = 9}}}));
  EXPECT_EQ(s.split_source, SplitSource::kSpansUnattributed);
  EXPECT_EQ(to_string(s.split_source), "spans-unattributed");
  EXPECT_EQ(busy_of(s, "a"), 600'000);
  EXPECT_EQ(busy_of(s, "b"), 200'000);
  EXPECT_EQ(busy_of(s, kU), 0);
  EXPECT_FALSE(s.split_disagreement);  // not NVML's split: nothing to disagree with
}

TEST(UnattributedSplit, WithoutSpansTheLaunchesSplitAndSaySo) {
  const WindowSplit s = split_window(shared({{"a", {.launches = 1}}, {"b", {.launches = 3}},
                                             {kU, {.nvml_sm_seconds = 5}}}));
  EXPECT_EQ(s.split_source, SplitSource::kLaunchesUnattributed);
  EXPECT_EQ(busy_of(s, "a"), 200'000);
  EXPECT_EQ(busy_of(s, "b"), 600'000);
}

TEST(UnattributedSplit, WithNoOtherEvidenceTheUnattributedPartStaysNobodys) {
  // The named user's 2 of 8 seconds is all it pays: the rest is never moved to it.
  const WindowSplit s = split_window(shared({{"a", {.nvml_sm_seconds = 2}}, {kU, {.nvml_sm_seconds = 6}}}));
  EXPECT_EQ(s.split_source, SplitSource::kNvml);
  EXPECT_EQ(busy_of(s, "a"), 200'000);
  EXPECT_EQ(busy_of(s, "b"), 0);
  EXPECT_EQ(busy_of(s, kU), 600'000);
}

TEST(UnattributedSplit, AnExclusiveHolderDoesNotPayForNobodysProcesses) {
  WindowInput in = shared({{"a", {.nvml_sm_seconds = 3}}, {kU, {.nvml_sm_seconds = 1}}});
  in.holders = {{"a", 1.0}};
  const WindowSplit s = split_window(in);
  EXPECT_FALSE(s.exclusive);
  EXPECT_EQ(busy_of(s, "a"), 600'000);
  EXPECT_EQ(busy_of(s, kU), 200'000);
}

TEST(UnattributedSplit, NamesAreTheContract) {
  EXPECT_EQ(kUnattributedAccount, "__unattributed__");
  EXPECT_TRUE(is_special_account(kUnattributedAccount));
  EXPECT_EQ(to_string(SplitSource::kLaunchesUnattributed), "launches-unattributed");
  EXPECT_DOUBLE_EQ(kUnattributedFallbackShare, 0.25);
}

}  // namespace
}  // namespace gpuledger::ledger
