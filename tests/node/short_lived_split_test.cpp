// Attacks on the NVML split of a shared GPU (issue 29 item 1), in the
// known-truth harness (split_truth_fixture.h: NVML's per-process samples are
// derived from the work each tenant really ran): a tenant cannot move its GPU
// time to a neighbour by running it in short-lived processes, and a GPU user
// the probes never see pays its share when its workload can be told, else
// its time goes to __unattributed__, never to the named tenants.
#include "split_truth_fixture.h"

#include "node/process_owners.h"

namespace gpuledger::node {
namespace {
using namespace gpuledger::ledger;
using namespace split_truth;

const std::string kU(kUnattributedAccount);

class ShortLivedSplit : public BusySplitTruth {
 protected:
  std::string unattributed_metric() const {
    const std::string name = "gpuledger_nvml_unattributed_sm_seconds_total{gpu=\"0\",UUID=\"GPU-shared\"} ";
    auto at = metrics_.find(name);
    return at == std::string::npos ? "" : metrics_.substr(at + name.size(), metrics_.find('\n', at) - at - name.size());
  }
};

TEST_F(ShortLivedSplit, WorkInShortLivedProcessesIsBilledToItsTenant) {
  // 90 % of the work in processes of 0.2 s that never synchronise (no spans),
  // the neighbour's 10 % in one long process.
  auto truth = run({{"attacker", 1000, 0.72, Pattern::kNever, 0.2}, {"neighbour", 101, 0.08, Pattern::kSameThread}},
                   180, true);
  expect_within(truth, 5, "nvml");
  EXPECT_EQ(unattributed_metric(), "");  // every pid found its owner
}

TEST_F(ShortLivedSplit, WithoutExitRecordsTheTimeIsUnattributedAndTheSpansSplit) {
  // The processes' owners lost (records evicted): their NVML time is
  // nobody's, most of the window's, so the spans split it and say so.
  auto truth = run({{"attacker", 1000, 0.72, Pattern::kSameThread, 0.2}, {"neighbour", 101, 0.08, Pattern::kSameThread}},
                   180, true, false);
  expect_within(truth, 5, "spans-unattributed");
  const std::string seconds = unattributed_metric();
  ASSERT_FALSE(seconds.empty()) << metrics_;
  EXPECT_GT(std::stod(seconds), 100);  // about 0.72 x 180 s, less the first poll's
  EXPECT_NE(metrics_.find("split_source=\"spans-unattributed\"} 3\n"), std::string::npos) << metrics_;
}

TEST_F(ShortLivedSplit, AGpuUserTheProbesNeverSawPaysForItsWorkload) {
  // A Vulkan-style user: NVML samples it, the probes do not; /proc names its workload.
  auto truth = run({{"vulkan", 500, 0.6, Pattern::kNever, 0, false}, {"neighbour", 101, 0.2, Pattern::kSameThread}},
                   180, true);
  expect_within(truth, 5, "nvml");
}

TEST_F(ShortLivedSplit, AGpuUserOfNoWorkloadIsUnattributedNeverTheNamedTenants) {
  // 12.5 % of the work by a process no workload is known for: __unattributed__
  // pays its share; the two tenants pay their own (within 5 points each).
  auto truth = run({{kU, 900, 0.1, Pattern::kNever, 0, false},
                    {"a", 101, 0.35, Pattern::kSameThread},
                    {"b", 202, 0.35, Pattern::kSameThread}},
                   180, true);
  expect_within(truth, 5, "nvml");
  ASSERT_FALSE(unattributed_metric().empty());
  EXPECT_NEAR(std::stod(unattributed_metric()), 0.1 * 180, 5);
}

TEST(ProcessSmMeter, TheMeterGivesAPidOfNoAccountToUnattributedAndCountsItPerSlot) {
  ProcessSmMeter m;
  EXPECT_TRUE(m.take({{"G", 1, "a", 5, "0"}, {"G", 3, "", 1, "0"}}).empty());  // the baseline
  auto d = m.take({{"G", 1, "a", 7, "0"}, {"G", 3, "", 4, "0"}, {"H", 4, "", 2, "1"}});
  EXPECT_DOUBLE_EQ((d[{"G", "a"}]), 2);
  EXPECT_DOUBLE_EQ((d[{"G", kU}]), 3);
  EXPECT_DOUBLE_EQ((d[{"H", kU}]), 2);
  ASSERT_EQ(m.unattributed_seconds().size(), 2u);
  EXPECT_DOUBLE_EQ(m.unattributed_seconds().at("G").seconds, 3);
  EXPECT_EQ(m.unattributed_seconds().at("H").gpu, "1");
}

TEST(ProcessOwners, AReusedPidIsNotGivenToTheRecordOfItsEarlierLife) {
  attribution::AttributionSnapshot snap;
  attribution::WorkloadView live;
  live.workload.id = "live";
  live.processes = {{7, "x", 0}};
  snap.workloads = {live};
  // pid 5 was the attacker's until t = 100 s; then another's, known from /proc since 200 s.
  snap.other_processes = {{5, "attacker", false, 50'000'000, 100'000'000}, {5, "other", false, 200'000'000, 0},
                          {6, "mps", true, 0, 0}, {8, "", false, 0, 0}};
  const ProcessOwners owners(snap);
  EXPECT_EQ(owners.of(7, 0)->account, "live");
  EXPECT_EQ(owners.of(5, 99'000'000)->account, "attacker");
  EXPECT_EQ(owners.of(5, 250'000'000)->account, "other");
  EXPECT_FALSE(owners.of(5, 150'000'000));  // after its exit, before the new life: nobody's
  EXPECT_TRUE(owners.of(6, 1)->infrastructure);
  EXPECT_FALSE(owners.of(8, 1));  // a record without a workload names nobody
  EXPECT_FALSE(owners.of(9, 1));
}

}  // namespace
}  // namespace gpuledger::node
