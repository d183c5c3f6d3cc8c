// From the attribution plane's snapshot to the accountant's input
// (node/snapshot_usage.h), and through the accountant to the windows.
#include "node/snapshot_usage.h"

#include <gtest/gtest.h>

#include "../ledger/ledger_dir_test.h"
#include "../ledger/ledger_fixture.h"
#include "ledger/accountant.h"
#include "report/report.h"

namespace gpuledger::node {
namespace {

using namespace gpuledger::ledger;
using testing::accounted;
using testing::kT0;
using testing::Totals;

class AccountantTest : public testing::LedgerDirTest {
 protected:
  AccountantTest() : LedgerDirTest("gl_snapshot_usage_") {}
  PriceBook prices_;
};

TEST(SnapshotUsage, FromTheAgentSnapshot) {
  attribution::AttributionSnapshot snap;
  attribution::WorkloadView v;
  v.workload.id = "k8s/uid/c1";
  v.names = {"ml", "trainer", "main", "vision"};
  v.usage.counters.launches = 7;
  v.usage.counters.allocated_bytes = 100;
  v.usage.counters.freed_bytes = 40;
  snap.workloads.push_back(v);
  auto u = workload_usages(snap);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].account, "k8s/uid/c1");
  EXPECT_EQ(u[0].labels, (AccountLabels{"ml", "trainer", "main", "vision"}));
  EXPECT_EQ(u[0].launches, 7u);
  EXPECT_EQ(u[0].live_bytes, 60u);
}

// A workload's by_gpu entry as the agent reports it: the GPU labels of a map
// key are learned late (when a process's environment is read), so counts the
// agent first listed under ("", "") move to ("0", uuid) in a later snapshot -
// and, for a key whose labels were never pinned, may move back. The workload's
// totals only ever grow; the ledger must count each launch and busy second
// exactly once however they move between the per-slot and "rest" streams.
attribution::GpuUsage gpu_usage(const std::string& gpu, const std::string& uuid, uint64_t launches, double busy_s) {
  attribution::GpuUsage g{gpu, uuid, {}};
  g.usage.counters.launches = launches;
  g.usage.counters.sync_ns = static_cast<uint64_t>(busy_s * 1e9);
  if constexpr (requires { g.usage.counters.busy_ns; })
    g.usage.counters.busy_ns = static_cast<uint64_t>(busy_s * 1e9);
  return g;
}

attribution::AttributionSnapshot snapshot_of(std::vector<attribution::GpuUsage> by_gpu) {
  attribution::WorkloadView v;
  v.workload.id = "k8s/serving";
  v.names = {"serving", "chat-inference", "server", "serving"};
  for (const auto& g : by_gpu) v.usage += g.usage;
  v.by_gpu = std::move(by_gpu);
  attribution::AttributionSnapshot snap;
  snap.workloads.push_back(std::move(v));
  return snap;
}

TEST_F(AccountantTest, CountsMovingBetweenSlotAndRestStreamsAreCountedOnce) {
  prices_ = parse_prices("default_per_hour: 0.06\n");
  Store store(db());
  Accountant acc(store, prices_);
  // Two map keys of one workload: k1 on device 0 (GPU-0 once its labels are
  // known) and k2 on an unknown device. Per 10 s each adds 10 launches, 1 s busy.
  struct Step {
    bool k1_labelled;
    uint64_t k1, k2;
  };
  const std::vector<Step> steps = {
      {false, 100, 50},  // t=0: nothing labelled yet, all in the rest
      {false, 110, 60},  // t=10
      {true, 120, 70},   // t=20: k1's labels learned: its 120 move to the GPU-0 stream
      {true, 130, 80},   // t=30
      {false, 140, 90},  // t=40: labels lost again (never pinned): back to the rest
      {true, 150, 100},  // t=50
      {true, 160, 110},  // t=60: closes window 0
      {true, 170, 120},  // t=70
      {false, 180, 130}, // t=80
      {true, 190, 140},  // t=90
      {true, 200, 150},  // t=100
      {true, 210, 160},  // t=110
      {true, 220, 170},  // t=120: closes window 1
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    auto k1 = s.k1_labelled ? gpu_usage("0", "GPU-0", s.k1, s.k1 / 10.0) : gpu_usage("", "", s.k1, s.k1 / 10.0);
    auto k2 = gpu_usage("", "", s.k2, s.k2 / 10.0);
    std::vector<attribution::GpuUsage> by_gpu;
    if (s.k1_labelled) {
      by_gpu = {k2, k1};  // sorted by (gpu, uuid): ("", "") first
    } else {
      k2.usage += k1.usage;  // one ("", "") entry for both keys
      by_gpu = {k2};
    }
    Observation o;
    o.time = static_cast<double>(kT0) + 10.0 * static_cast<double>(i);
    o.slots = {{"GPU-0", "x", std::nullopt, ""}};
    o.holders = {{"GPU-0", "k8s/serving", {"serving", "chat-inference", "server", "serving"}, 1}};
    o.workloads = workload_usages(snapshot_of(by_gpu));
    acc.observe(o);
  }
  auto ws = store.windows(kT0, kT0 + 120);
  ASSERT_EQ(ws.size(), 2u);
  // Activity between the first observation (150 launches, 15 s) and the last
  // (390 launches, 39 s): 20 launches and 2 s per 10 s, 120 and 12 per window.
  for (const auto& w : ws) {
    Totals t = accounted({w}, "k8s/serving");
    EXPECT_EQ(t.launches, 120u) << w.start;
    EXPECT_NEAR(t.busy_seconds, 12.0, 1e-6) << w.start;
  }
  Totals all = accounted(ws, "k8s/serving");
  EXPECT_EQ(all.launches, 240u);
  EXPECT_NEAR(all.busy_seconds, 24.0, 1e-6);
  // The report by team says the same.
  auto r = report::build_report(ws, kT0, kT0 + 120, report::GroupBy::kTeam);
  bool found = false;
  for (const auto& row : r.rows)
    if (row.key == "serving") {
      found = true;
      EXPECT_EQ(row.launches, 240u);
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(r.total.launches, 240u);
}

}  // namespace
}  // namespace gpuledger::node
