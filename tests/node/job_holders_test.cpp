#include "node/job_holders.h"

#include <gtest/gtest.h>

#include "../ledger/ledger_dir_test.h"
#include "ledger/prices.h"
#include "ledger/store.h"
#include "report/job_bill.h"

namespace gpuledger::node {
namespace {
using namespace gpuledger::ledger;

// Two whole GPUs, indices 0 and 1, NVML's utilisation on each; GPU 0's
// energy counter at `joules0` when given.
device::DeviceSnapshot two_gpus(double busy0, double busy1, std::optional<double> joules0 = std::nullopt) {
  device::DeviceSnapshot d;
  for (unsigned i : {0u, 1u}) {
    device::GpuInfo g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.model = "NVIDIA H100 80GB HBM3";
    d.gpus.push_back(g);
    device::DeviceReading r;
    r.source = device::Source::kNvml;
    r.uuid = g.uuid;
    r[device::DeviceField::kUtilizationRatio] = i == 0 ? busy0 : busy1;
    if (i == 0 && joules0) r[device::DeviceField::kEnergyJoules] = *joules0;
    d.readings.push_back(r);
  }
  return d;
}

std::map<std::string, slurm::LiveJob> running(std::initializer_list<const char*> jobs) {
  std::map<std::string, slurm::LiveJob> out;
  for (const char* j : jobs) out[j] = {j, std::string("/slurm/uid_1000/job_") + j, 1000u};
  return out;
}

class FixedTeam : public identity::WorkloadNamer {
 public:
  identity::WorkloadNames names_for(const identity::Workload& w) const override {
    return {"", "", "", w.slurm_job == "43" ? "hpc" : ""};
  }
};

TEST(JobHolders, EachRunningJobOfAFileHoldsItsGpuInEqualParts) {
  slurm::JobMapping m;
  m.jobs_by_gpu = {{"0", {"42"}}, {"1", {"43", "44"}}, {"GPU-1", {"45"}}};
  const FixedTeam namer;
  JobHolderCounts counts;
  const auto holders = job_holders(m, running({"42", "43", "44", "45"}), two_gpus(0, 0), {}, &namer, &counts);
  ASSERT_EQ(holders.size(), 4u);
  EXPECT_EQ(holders[0].slot_uuid, "GPU-0");
  EXPECT_EQ(holders[0].account, "slurm/42");
  EXPECT_EQ(holders[0].weight, 1.0);
  EXPECT_EQ(holders[1].account, "slurm/43");
  EXPECT_EQ(holders[1].weight, 0.5);
  EXPECT_EQ(holders[1].labels.team, "hpc");
  EXPECT_EQ(holders[2].weight, 0.5);
  EXPECT_EQ(holders[3].slot_uuid, "GPU-1");  // named by its UUID
  EXPECT_EQ(counts.jobs_not_running, 0u);
}

// Attack: a line naming a job that does not run here (a finished job, a
// guess, another node's) bills nobody; nor does a file naming no GPU here.
TEST(JobHolders, AJobWithoutARunningCgroupOrAGpuNotHereHoldsNothing) {
  slurm::JobMapping m;
  m.jobs_by_gpu = {{"0", {"42", "999"}}, {"7", {"42"}}, {"GPU-nothere", {"42"}}};
  JobHolderCounts counts;
  const auto holders = job_holders(m, running({"42"}), two_gpus(0, 0), {}, nullptr, &counts);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].account, "slurm/42");
  EXPECT_EQ(holders[0].weight, 1.0);  // the one running job holds it whole
  EXPECT_EQ(counts.jobs_not_running, 1u);
  EXPECT_EQ(counts.unknown_gpus, 2u);
}

class JobBill : public testing::LedgerDirTest {
 protected:
  JobBill() : LedgerDirTest("gl_jobbill_") {}
};

// The node: no Kubernetes, job 42 holds GPU 0 and uses it lightly, GPU
// 1 held by nobody, three 5 s windows at 3.60 an hour (5'000 micro-units a
// window a GPU). The job pays all of GPU 0, idle included; GPU 1 is
// __unallocated__; no window is __allocation_unknown__.
TEST_F(JobBill, TheJobHoldingAGpuPaysAllOfItsTime) {
  const PriceBook prices = parse_prices("currency: EUR\ndefault_per_hour: 3.60\nwindow_seconds: 5\n");
  Store store(db());
  Accountant acc(store, prices);
  constexpr int64_t kT0 = 1'800'000'000;
  slurm::JobMapping m;
  m.jobs_by_gpu = {{"0", {"42"}}};
  for (int t = 0; t <= 15; ++t) {
    attribution::AttributionSnapshot snap;
    attribution::WorkloadView job;
    job.workload.id = "slurm/42";
    job.workload.kind = identity::WorkloadKind::kSlurm;
    job.usage.counters.launches = static_cast<uint64_t>(10 * t);
    job.processes = {{4242, "trainer", 0}};
    snap.workloads = {job};
    acc.observe(make_job_observation(static_cast<double>(kT0 + t), snap, two_gpus(0.1, 0, 1000.0 + 300.0 * t), m,
                                     running({"42"}), nullptr, prices));
  }
  const auto ws = store.windows(kT0, kT0 + 15);
  ASSERT_EQ(ws.size(), 6u);
  for (const auto& w : ws) {
    ASSERT_EQ(w.cost_micros, 5'000);
    if (w.slot.uuid == "GPU-0") {
      EXPECT_EQ(w.charges, (std::vector<Charge>{{"slurm/42", ChargeKind::kBusy, 500},
                                               {"slurm/42", ChargeKind::kIdle, 4'500}}));
    } else {
      EXPECT_EQ(w.charges, (std::vector<Charge>{{"__unallocated__", ChargeKind::kIdle, 5'000}}));
    }
  }
  // `gpuledger job 42`: three windows of GPU 0, held whole; 300 J/s all its own.
  const report::JobBill bill = report::job_bill("42", ws);
  EXPECT_EQ(bill.windows, 3);
  EXPECT_EQ(bill.gpus, (std::vector<std::string>{"GPU-0"}));
  EXPECT_DOUBLE_EQ(bill.held_gpu_hours, 15.0 / 3600.0);
  EXPECT_DOUBLE_EQ(bill.busy_gpu_hours, 1.5 / 3600.0);
  EXPECT_EQ(bill.cost_micros, 15'000);
  EXPECT_EQ(bill.busy_micros, 1'500);
  EXPECT_EQ(bill.idle_micros, 13'500);
  EXPECT_EQ(bill.energy_millijoules, 4'500'000);
  EXPECT_FALSE(bill.carbon_grams);  // no intensity configured: unknown, not 0
  EXPECT_FALSE(bill.sm_active);     // no SM-active reading
  EXPECT_EQ(bill.currency, "EUR");
}

TEST_F(JobBill, AnUnreadableDirectoryIsAllocationUnknown) {
  const auto o = make_job_observation(1.8e9, {}, two_gpus(0, 0), std::nullopt, {}, nullptr, {});
  ASSERT_EQ(o.holders.size(), 2u);
  EXPECT_EQ(o.holders[0].account, "__allocation_unknown__");
  EXPECT_TRUE(o.allocation_known);
}

}  // namespace
}  // namespace gpuledger::node
