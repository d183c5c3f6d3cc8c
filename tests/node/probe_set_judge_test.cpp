// Tests for node/probe_set_judge.h: which probe set `auto` chooses for which
// node, and when its switch moves.
#include "node/probe_set_judge.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace gpuledger::node {
namespace {
using probes::ProbeSet;

device::GpuInfo gpu(unsigned index, const std::string& uuid, std::optional<bool> samples, bool mig = false) {
  device::GpuInfo g;
  g.index = index;
  g.uuid = uuid;
  g.mig_enabled = mig;
  g.process_samples = samples;
  if (samples && !*samples) g.process_samples_error = "Not Supported (3)";
  g.origins = {"nvml"};
  return g;
}

device::DeviceSnapshot nvml_up(std::vector<device::GpuInfo> gpus) {
  device::DeviceSnapshot d;
  d.gpus = std::move(gpus);
  d.health.nvml_up = true;
  return d;
}

device::ProcessReading process(uint32_t pid, const std::string& uuid, std::optional<unsigned> instance = std::nullopt,
                               bool mps = false) {
  device::ProcessReading p;
  p.pid = pid;
  p.gpu_uuid = uuid;
  p.gpu_instance_id = instance;
  p.mps = mps;
  return p;
}

struct Node {
  device::DeviceSnapshot device;
  std::map<uint32_t, std::string> owners;
  std::set<uint32_t> mps_executables;
  bool daemon = false;
  std::vector<kubernetes::GpuAllocation> allocations;

  ProbeSetVerdict judge() const {
    NodeSplitFacts f;
    f.device = &device;
    f.workload_of = [this](uint32_t pid, unsigned long long) {
      auto it = owners.find(pid);
      return it == owners.end() ? std::string() : it->second;
    };
    f.runs_mps = [this](uint32_t pid) { return mps_executables.contains(pid); };
    f.mps_daemon_running = daemon;
    f.allocations = allocations;
    return judge_node(f);
  }
};

TEST(ProbeSetJudge, BillingWhereNvmlSplitsEveryGpu) {
  Node n{nvml_up({gpu(0, "GPU-a", true), gpu(1, "GPU-b", true)})};
  n.device.gpus[0].process_samples_split = true;  // seen sampling two processes at one instant
  n.device.processes = {process(10, "GPU-a"), process(11, "GPU-a"), process(12, "GPU-b")};
  n.owners = {{10, "pod-a"}, {11, "pod-b"}, {12, "pod-c"}};
  const auto v = n.judge();
  EXPECT_EQ(v.set, ProbeSet::kBilling);
  EXPECT_EQ(reason_code(v.reason), "device_splits");
  // An empty node qualifies too: nothing needs splitting.
  EXPECT_EQ(Node{nvml_up({})}.judge().set, ProbeSet::kBilling);
}

// Driver 580 on an H200 keeps one sample per period for the whole GPU
// (docs/gpu-validation.md): two workloads time-slicing it are weighed by the
// launch probes, whatever else the node is.
TEST(ProbeSetJudge, FullWhereWorkloadsTimeSliceAGpuWhoseSamplesCannotSplitIt) {
  Node n{nvml_up({gpu(0, "GPU-a", true), gpu(1, "GPU-b", true)})};
  n.device.gpus[0].process_samples_split = false;
  n.device.processes = {process(10, "GPU-a"), process(11, "GPU-a"), process(12, "GPU-b")};
  n.owners = {{10, "pod-a"}, {11, "pod-a"}, {12, "pod-c"}};
  EXPECT_EQ(n.judge().set, ProbeSet::kBilling) << "one workload on each GPU: nothing to split";
  n.owners[11] = "pod-b";
  auto v = n.judge();
  EXPECT_EQ(v.set, ProbeSet::kFull);
  EXPECT_EQ(reason_code(v.reason), "shared_gpu");
  EXPECT_EQ(v.why, "GPU 0 (GPU-a) runs processes of 2 workloads, and its NVML samples one process per period: only "
                   "the launch probes split its time");
  // Not seen either way yet: not trusted to split.
  n.device.gpus[0].process_samples_split.reset();
  v = n.judge();
  EXPECT_EQ(reason_code(v.reason), "shared_gpu");
  EXPECT_NE(v.why.find("has not been seen to sample two at once"), std::string::npos) << v.why;
  // A pid nobody can name may be anybody's.
  n.owners.erase(11);
  EXPECT_EQ(reason_code(n.judge().reason), "shared_gpu");
  // The kubelet's time-slicing replicas of GPU-b to two pods, before either runs.
  Node k{nvml_up({gpu(0, "GPU-a", true), gpu(1, "GPU-b", true)})};
  for (const char* pod : {"p1", "p2"}) {
    kubernetes::GpuAllocation a;
    a.namespace_name = "ns";
    a.pod = pod;
    a.device.uuid = "GPU-b";
    a.mode = "time-slicing";
    a.share = 0.5;
    k.allocations.push_back(a);
  }
  v = k.judge();
  EXPECT_EQ(reason_code(v.reason), "shared_gpu");
  EXPECT_NE(v.why.find("GPU 1 (GPU-b) is allocated to 2 pods"), std::string::npos) << v.why;
  k.device.gpus[1].process_samples_split = true;
  EXPECT_EQ(k.judge().set, ProbeSet::kBilling);
}

TEST(ProbeSetJudge, FullWithoutNvml) {
  Node n;
  n.device.health.nvml_error = "libnvidia-ml.so.1: cannot open shared object file";
  const auto v = n.judge();
  EXPECT_EQ(v.set, ProbeSet::kFull);
  EXPECT_EQ(reason_code(v.reason), "nvml_down");
  EXPECT_NE(v.why.find("cannot open shared object file"), std::string::npos) << v.why;
  EXPECT_EQ(judge_node({}).set, ProbeSet::kFull) << "no device snapshot at all";
}

TEST(ProbeSetJudge, FullWhereOneGpuGivesNoPerProcessSamples) {
  for (std::optional<bool> samples : {std::optional<bool>(false), std::optional<bool>()}) {
    Node n{nvml_up({gpu(0, "GPU-a", true), gpu(1, "GPU-b", samples)})};
    const auto v = n.judge();
    EXPECT_EQ(v.set, ProbeSet::kFull);
    EXPECT_EQ(reason_code(v.reason), "no_process_samples");
    EXPECT_NE(v.why.find("GPU 1 (GPU-b)"), std::string::npos) << v.why;
  }
}

TEST(ProbeSetJudge, FullUnderMpsByClientServerAllocationOrDaemon) {
  const auto gpus = std::vector{gpu(0, "GPU-a", true), gpu(1, "GPU-b", true)};
  Node client{nvml_up(gpus)};
  client.device.processes = {process(10, "GPU-b", std::nullopt, true)};
  EXPECT_EQ(reason_code(client.judge().reason), "mps");
  Node server{nvml_up(gpus)};
  server.device.processes = {process(20, "GPU-a")};
  server.mps_executables = {20};
  EXPECT_EQ(reason_code(server.judge().reason), "mps");
  EXPECT_NE(server.judge().why.find("GPU 0 (GPU-a) runs MPS"), std::string::npos);
  Node daemon{nvml_up(gpus)};
  daemon.daemon = true;
  EXPECT_EQ(daemon.judge().set, ProbeSet::kFull);
  EXPECT_EQ(reason_code(daemon.judge().reason), "mps");
  Node replicas{nvml_up(gpus)};
  kubernetes::GpuAllocation a;
  a.namespace_name = "ml";
  a.pod = "p";
  a.device.uuid = "GPU-a";
  a.mode = "mps";
  replicas.allocations = {a};
  EXPECT_EQ(reason_code(replicas.judge().reason), "mps");
}

TEST(ProbeSetJudge, MigInstancesHeldByOneWorkloadEachQualifyASharedOneDoesNot) {
  // MIG gives no per-process samples: each instance is billed whole to its holder.
  Node n{nvml_up({gpu(0, "GPU-m", false, true), gpu(1, "GPU-b", true)})};
  n.device.processes = {process(10, "GPU-m", 1), process(11, "GPU-m", 1), process(12, "GPU-m", 2)};
  n.owners = {{10, "pod-a"}, {11, "pod-a"}, {12, "pod-b"}};
  EXPECT_EQ(n.judge().set, ProbeSet::kBilling) << n.judge().why;
  n.owners[11] = "pod-c";  // instance 1 now runs two workloads
  auto v = n.judge();
  EXPECT_EQ(v.set, ProbeSet::kFull);
  EXPECT_EQ(reason_code(v.reason), "shared_mig_instance");
  EXPECT_NE(v.why.find("MIG instance 1 of GPU 0 (GPU-m)"), std::string::npos) << v.why;
  // A pid nobody can name is a holder of its own: it may be anybody's.
  n.owners.erase(11);
  EXPECT_EQ(n.judge().set, ProbeSet::kFull);
}

TEST(ProbeSetJudge, AMigInstanceAllocatedToTwoPodsIsShared) {
  Node n{nvml_up({gpu(0, "GPU-m", false, true)})};
  kubernetes::GpuAllocation a;
  a.namespace_name = "ml";
  a.pod = "one";
  a.device.uuid = "GPU-m";
  a.device.mig_instance = "1/0";
  a.mode = "mig-time-slicing";
  auto b = a;
  b.pod = "two";
  n.allocations = {a};
  EXPECT_EQ(n.judge().set, ProbeSet::kBilling);
  n.allocations = {a, b};
  EXPECT_EQ(reason_code(n.judge().reason), "shared_mig_instance");
  // Time-slicing replicas of a whole GPU are split by NVML's samples where
  // they were seen to split it (two processes sampled at one instant).
  a.device.mig_instance.clear();
  b.device.mig_instance.clear();
  a.mode = b.mode = "time-slicing";
  a.device.uuid = b.device.uuid = "GPU-b";
  Node whole{nvml_up({gpu(0, "GPU-b", true)})};
  whole.allocations = {a, b};
  EXPECT_EQ(reason_code(whole.judge().reason), "shared_gpu");
  whole.device.gpus[0].process_samples_split = true;
  EXPECT_EQ(whole.judge().set, ProbeSet::kBilling);
}

TEST(ProbeSetSwitch, ToFullAtOnceBackToBillingOnlyAfterSettling) {
  using namespace std::chrono_literals;
  ProbeSetSwitch sw(15s);
  const ProbeSetVerdict billing{ProbeSet::kBilling, ProbeSetReason::kDeviceSplits, ""};
  const ProbeSetVerdict full{ProbeSet::kFull, ProbeSetReason::kMps, ""};
  const auto t0 = std::chrono::steady_clock::time_point{} + 100s;
  EXPECT_EQ(sw.update(ProbeSet::kFull, billing, t0), std::nullopt) << "not settled yet";
  EXPECT_EQ(sw.update(ProbeSet::kFull, billing, t0 + 14s), std::nullopt);
  EXPECT_EQ(sw.update(ProbeSet::kFull, billing, t0 + 15s), ProbeSet::kBilling);
  EXPECT_EQ(sw.update(ProbeSet::kBilling, billing, t0 + 20s), std::nullopt);
  EXPECT_EQ(sw.update(ProbeSet::kBilling, full, t0 + 21s), ProbeSet::kFull) << "at once";
  EXPECT_EQ(sw.update(ProbeSet::kFull, full, t0 + 22s), std::nullopt);
  // A break in qualifying starts the wait again.
  EXPECT_EQ(sw.update(ProbeSet::kFull, billing, t0 + 30s), std::nullopt);
  EXPECT_EQ(sw.update(ProbeSet::kFull, full, t0 + 40s), std::nullopt);
  EXPECT_EQ(sw.update(ProbeSet::kFull, billing, t0 + 41s), std::nullopt);
  EXPECT_EQ(sw.update(ProbeSet::kFull, billing, t0 + 55s), std::nullopt);
  EXPECT_EQ(sw.update(ProbeSet::kFull, billing, t0 + 56s), ProbeSet::kBilling);
}

}  // namespace
}  // namespace gpuledger::node
