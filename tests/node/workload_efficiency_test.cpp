#include "node/workload_efficiency.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "exposition_parser.h"

namespace gpuledger::node {
namespace {
using namespace gpuledger::device;

using gpuledger::testing::parse_exposition;
using gpuledger::testing::sample_value;

const std::string kGpu0 = "GPU-3f6a2c1e-8b4d-7e21-9c0a-5d1e2f3a4b5c";
const std::string kGpu1 = "GPU-9e8d7c6b-5a49-3827-1605-f4e3d2c1b0a9";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

attribution::WorkloadView workload(const std::string& name, std::vector<uint32_t> pids = {}) {
  attribution::WorkloadView w;
  w.workload.kind = identity::WorkloadKind::kKubernetes;
  w.workload.pod_uid = "uid-" + name;
  w.workload.container_id = "cid-" + name;
  w.workload.id = "k8s/" + w.workload.pod_uid + "/" + w.workload.container_id;
  w.names = {"ml", "pod-" + name, "main", "team-" + name};
  for (auto pid : pids) w.processes.push_back({pid, "python", 0});
  return w;
}

// Cumulative counters of `w` on one GPU, as the agent reports them.
void on_gpu(attribution::WorkloadView& w, const std::string& gpu, const std::string& uuid, uint64_t busy_ns,
            uint64_t launches) {
  attribution::GpuUsage g;
  g.gpu = gpu;
  g.uuid = uuid;
  g.usage.counters.busy_ns = busy_ns;
  g.usage.counters.launches = launches;
  g.usage.counters.allocated_bytes = 123456789;  // live bytes: never memory used
  w.by_gpu.push_back(g);
  w.usage += g.usage;
}

attribution::AttributionSnapshot agent_snapshot(std::vector<attribution::WorkloadView> workloads) {
  attribution::AttributionSnapshot s;
  s.workloads = std::move(workloads);
  std::sort(s.workloads.begin(), s.workloads.end(),
            [](const auto& a, const auto& b) { return a.workload.id < b.workload.id; });
  return s;
}

DeviceReading dcgm(const std::string& uuid, unsigned index, double sm, double occupancy, double tensor, double dram,
                   double memory_used) {
  DeviceReading r;
  r.source = Source::kDcgm;
  r.uuid = uuid;
  r.gpu_index = index;
  r[DeviceField::kSmActiveRatio] = sm;
  r[DeviceField::kSmOccupancyRatio] = occupancy;
  r[DeviceField::kTensorActiveRatio] = tensor;
  r[DeviceField::kDramActiveRatio] = dram;
  r[DeviceField::kMemoryUsedBytes] = memory_used;
  return r;
}

ProcessReading proc(uint32_t pid, const std::string& uuid, std::optional<uint64_t> used,
                    std::optional<double> sm = std::nullopt) {
  ProcessReading p;
  p.pid = pid;
  p.gpu_uuid = uuid;
  p.used_bytes = used;
  p.sm_util_ratio = sm;
  return p;
}

DeviceSnapshot device_snapshot(std::vector<DeviceReading> readings, std::vector<ProcessReading> processes = {}) {
  DeviceSnapshot d;
  d.gpus = {{0u, kGpu0, "NVIDIA A100-SXM4-80GB", "00000000:07:00.0", 0u, false, {"nvml"}},
            {1u, kGpu1, "NVIDIA A100-SXM4-80GB", "00000000:0F:00.0", 1u, false, {"nvml"}}};
  d.readings = std::move(readings);
  d.processes = std::move(processes);
  return d;
}

const WorkloadEfficiency* find(const std::vector<WorkloadEfficiency>& results, const std::string& workload_name,
                               const std::string& uuid) {
  for (const auto& e : results)
    if (e.workload.pod_uid == "uid-" + workload_name && e.uuid == uuid) return &e;
  return nullptr;
}

EfficiencyValue value(double v, EfficiencySource s) { return {v, s}; }

double sum_of(const std::vector<WorkloadEfficiency>& results, const std::string& uuid, EfficiencyField f) {
  double sum = 0;
  for (const auto& e : results)
    if (e.uuid == uuid && e[f]) sum += e[f]->value;
  return sum;
}

TEST(WorkloadEfficiency, ExclusiveGpuGetsTheDeviceValues) {
  auto a = workload("a", {100});
  auto b = workload("b", {200});
  on_gpu(a, "0", kGpu0, 5'000'000'000, 1000);
  on_gpu(b, "1", kGpu1, 7'000'000'000, 10);
  auto dev = device_snapshot({dcgm(kGpu0, 0, 0.75, 0.5, 0.25, 0.125, 40 * kGiB)});

  EfficiencyApportioner apportioner;
  apportioner.update(agent_snapshot({a, b}), dev);
  EXPECT_TRUE(apportioner.results().empty()) << "no interval yet: nobody is known to be active";

  a.by_gpu[0].usage.counters.busy_ns += 2'000'000'000;
  a.by_gpu[0].usage.counters.launches += 500;
  b.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;  // active on GPU1, which has no reading
  apportioner.update(agent_snapshot({a, b}), dev);
  const auto& r = apportioner.results();
  ASSERT_EQ(r.size(), 1u);
  const auto* e = find(r, "a", kGpu0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->gpu, "0");
  EXPECT_EQ(e->basis, ShareBasis::kExclusive);
  EXPECT_EQ(e->share, 1.0);
  EXPECT_EQ((*e)[EfficiencyField::kSmActiveRatio], value(0.75, EfficiencySource::kDevice));
  EXPECT_EQ((*e)[EfficiencyField::kSmOccupancyRatio], value(0.5, EfficiencySource::kDevice));
  EXPECT_EQ((*e)[EfficiencyField::kTensorActiveRatio], value(0.25, EfficiencySource::kDevice));
  EXPECT_EQ((*e)[EfficiencyField::kDramActiveRatio], value(0.125, EfficiencySource::kDevice));
  EXPECT_EQ((*e)[EfficiencyField::kGpuMemoryUsedBytes], value(40 * kGiB, EfficiencySource::kDevice));

  // NVML lists only a's process: still exclusive, and its memory is NVML's, measured.
  dev.processes = {proc(100, kGpu0, 30 * 1024ull * 1024 * 1024)};
  a.by_gpu[0].usage.counters.busy_ns += 1;
  apportioner.update(agent_snapshot({a, b}), dev);
  e = find(apportioner.results(), "a", kGpu0);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)[EfficiencyField::kSmActiveRatio], value(0.75, EfficiencySource::kDevice));
  EXPECT_EQ((*e)[EfficiencyField::kGpuMemoryUsedBytes], value(30 * kGiB, EfficiencySource::kNvml));
}

TEST(WorkloadEfficiency, SharedGpuIsSplitByNvmlSmSamples) {
  auto a = workload("a", {100, 101});
  auto b = workload("b", {200});
  on_gpu(a, "0", kGpu0, 1'000'000'000, 10);
  on_gpu(b, "0", kGpu0, 1'000'000'000, 10);
  auto dev = device_snapshot({dcgm(kGpu0, 0, 0.5, 0.25, 0.25, 0.75, 60 * kGiB)},
                             {proc(100, kGpu0, 1024ull << 20, 0.25), proc(101, kGpu0, 2048ull << 20, 0.125),
                              proc(200, kGpu0, 8192ull << 20, 0.625)});
  EfficiencyApportioner apportioner;
  apportioner.update(agent_snapshot({a, b}), dev);
  // eBPF says the opposite split (b 9x a's busy time); NVML samples win.
  a.by_gpu[0].usage.counters.busy_ns += 100'000'000;
  b.by_gpu[0].usage.counters.busy_ns += 900'000'000;
  apportioner.update(agent_snapshot({a, b}), dev);
  const auto& r = apportioner.results();
  ASSERT_EQ(r.size(), 2u);
  const auto* ea = find(r, "a", kGpu0);
  const auto* eb = find(r, "b", kGpu0);
  ASSERT_TRUE(ea && eb);
  EXPECT_EQ(ea->basis, ShareBasis::kNvmlSmSamples);
  EXPECT_EQ(ea->share, 0.375);  // (0.25 + 0.125) / 1.0
  EXPECT_EQ(eb->share, 0.625);
  EXPECT_EQ((*ea)[EfficiencyField::kSmActiveRatio], value(0.1875, EfficiencySource::kNvml));
  EXPECT_EQ((*eb)[EfficiencyField::kSmActiveRatio], value(0.3125, EfficiencySource::kNvml));
  EXPECT_EQ((*ea)[EfficiencyField::kSmOccupancyRatio], value(0.09375, EfficiencySource::kNvml));
  EXPECT_EQ((*eb)[EfficiencyField::kSmOccupancyRatio], value(0.15625, EfficiencySource::kNvml));
  EXPECT_EQ((*ea)[EfficiencyField::kTensorActiveRatio], value(0.09375, EfficiencySource::kNvml));
  EXPECT_EQ((*ea)[EfficiencyField::kDramActiveRatio], value(0.28125, EfficiencySource::kNvml));
  EXPECT_EQ((*eb)[EfficiencyField::kDramActiveRatio], value(0.46875, EfficiencySource::kNvml));
  // The parts add up to the device value; nobody got the whole of it.
  EXPECT_DOUBLE_EQ(sum_of(r, kGpu0, EfficiencyField::kSmActiveRatio), 0.5);
  EXPECT_DOUBLE_EQ(sum_of(r, kGpu0, EfficiencyField::kSmOccupancyRatio), 0.25);
  EXPECT_DOUBLE_EQ(sum_of(r, kGpu0, EfficiencyField::kTensorActiveRatio), 0.25);
  EXPECT_DOUBLE_EQ(sum_of(r, kGpu0, EfficiencyField::kDramActiveRatio), 0.75);
  // Memory: per process from NVML, exact, not the device's 60 GiB.
  EXPECT_EQ((*ea)[EfficiencyField::kGpuMemoryUsedBytes], value(3 * 1024.0 * 1024 * 1024, EfficiencySource::kNvml));
  EXPECT_EQ((*eb)[EfficiencyField::kGpuMemoryUsedBytes], value(8 * kGiB, EfficiencySource::kNvml));
}

TEST(WorkloadEfficiency, SharedGpuWithoutNvmlIsSplitByBusyTimeOverTheInterval) {
  auto a = workload("a");
  auto b = workload("b");
  auto c = workload("c");
  on_gpu(a, "0", kGpu0, 10'000'000'000, 1000);  // since start: a dominates
  on_gpu(b, "0", kGpu0, 1'000'000'000, 1000);
  on_gpu(c, "1", kGpu1, 5'000'000'000, 10);  // active elsewhere: not a tenant of GPU0
  auto dev = device_snapshot({dcgm(kGpu0, 0, 0.8, 0.4, 0.2, 0.6, 50 * kGiB)});
  EfficiencyApportioner apportioner;
  apportioner.update(agent_snapshot({a, b, c}), dev);

  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  b.by_gpu[0].usage.counters.busy_ns += 3'000'000'000;
  a.by_gpu[0].usage.counters.launches += 900;  // launches disagree; busy_ns is primary
  b.by_gpu[0].usage.counters.launches += 100;
  c.by_gpu[0].usage.counters.busy_ns += 1;
  apportioner.update(agent_snapshot({a, b, c}), dev);
  const auto& r = apportioner.results();
  ASSERT_EQ(r.size(), 2u);
  const auto* ea = find(r, "a", kGpu0);
  const auto* eb = find(r, "b", kGpu0);
  ASSERT_TRUE(ea && eb);
  EXPECT_EQ(ea->basis, ShareBasis::kBusyNs);
  EXPECT_EQ(ea->share, 0.25);  // 1 s of 4 s in the interval, not 11 of 15 since start
  EXPECT_EQ(eb->share, 0.75);
  EXPECT_DOUBLE_EQ((*ea)[EfficiencyField::kSmActiveRatio]->value, 0.2);
  EXPECT_DOUBLE_EQ((*eb)[EfficiencyField::kSmActiveRatio]->value, 0.6);
  EXPECT_EQ((*ea)[EfficiencyField::kSmActiveRatio]->source, EfficiencySource::kApportioned);
  EXPECT_DOUBLE_EQ((*ea)[EfficiencyField::kSmOccupancyRatio]->value, 0.1);
  EXPECT_DOUBLE_EQ((*eb)[EfficiencyField::kSmOccupancyRatio]->value, 0.3);
  EXPECT_DOUBLE_EQ((*ea)[EfficiencyField::kTensorActiveRatio]->value, 0.05);
  EXPECT_DOUBLE_EQ((*eb)[EfficiencyField::kDramActiveRatio]->value, 0.45);
  for (auto f : {EfficiencyField::kSmActiveRatio, EfficiencyField::kSmOccupancyRatio,
                 EfficiencyField::kTensorActiveRatio, EfficiencyField::kDramActiveRatio}) {
    const auto& info = efficiency_fields()[static_cast<size_t>(f)];
    EXPECT_DOUBLE_EQ(sum_of(r, kGpu0, f), *dev.readings[0][info.device_field]) << info.metric;
  }
  // Shared without NVML: memory used is unknown (live bytes are not memory used).
  EXPECT_FALSE((*ea)[EfficiencyField::kGpuMemoryUsedBytes]);
  EXPECT_FALSE((*eb)[EfficiencyField::kGpuMemoryUsedBytes]);

  // No busy time closed in this interval: launches decide.
  a.by_gpu[0].usage.counters.launches += 30;
  b.by_gpu[0].usage.counters.launches += 10;
  apportioner.update(agent_snapshot({a, b, c}), dev);
  ea = find(apportioner.results(), "a", kGpu0);
  ASSERT_TRUE(ea);
  EXPECT_EQ(ea->basis, ShareBasis::kLaunches);
  EXPECT_EQ(ea->share, 0.75);
  EXPECT_DOUBLE_EQ(sum_of(apportioner.results(), kGpu0, EfficiencyField::kSmActiveRatio), 0.8);

  // Nothing ran in the interval: nobody gets a part.
  apportioner.update(agent_snapshot({a, b, c}), dev);
  EXPECT_TRUE(apportioner.results().empty());
}

TEST(WorkloadEfficiency, ANewTenantCountsFromZeroAndEndsExclusivity) {
  auto a = workload("a");
  on_gpu(a, "0", kGpu0, 1'000'000'000, 10);
  auto dev = device_snapshot({dcgm(kGpu0, 0, 0.5, 0.5, 0.5, 0.5, 10 * kGiB)});
  EfficiencyApportioner apportioner;
  apportioner.update(agent_snapshot({a}), dev);
  auto b = workload("b");
  on_gpu(b, "0", kGpu0, 3'000'000'000, 10);  // first seen: all of it is in this interval
  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  apportioner.update(agent_snapshot({a, b}), dev);
  const auto* ea = find(apportioner.results(), "a", kGpu0);
  const auto* eb = find(apportioner.results(), "b", kGpu0);
  ASSERT_TRUE(ea && eb);
  EXPECT_EQ((*ea)[EfficiencyField::kSmActiveRatio], value(0.125, EfficiencySource::kApportioned));
  EXPECT_EQ((*eb)[EfficiencyField::kSmActiveRatio], value(0.375, EfficiencySource::kApportioned));
}

TEST(WorkloadEfficiency, GpuWithoutReadingsExportsNothing) {
  auto a = workload("a", {100});
  on_gpu(a, "1", kGpu1, 1'000'000'000, 10);
  DeviceReading mig = dcgm(kGpu1, 1, 0.5, 0.5, 0.5, 0.5, 5 * kGiB);  // one MIG instance, named by its parent
  mig.gpu_instance_id = "1";
  mig.gpu_instance_profile = "1g.10gb";
  auto dev = device_snapshot({dcgm(kGpu0, 0, 0.5, 0.5, 0.5, 0.5, 10 * kGiB), mig},
                             {proc(100, kGpu1, 1ull << 30, 0.5)});
  EfficiencyApportioner apportioner;
  apportioner.update(agent_snapshot({a}), dev);
  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  apportioner.update(agent_snapshot({a}), dev);
  EXPECT_TRUE(apportioner.results().empty());  // unknown, not 0

  metrics::ExpositionWriter out;
  write_efficiency_metrics(apportioner.results(), out);
  EXPECT_EQ(out.text(), "");

  // A field the reading lacks is left out too.
  dev.readings.push_back(DeviceReading{});
  dev.readings.back().source = Source::kNvml;
  dev.readings.back().uuid = kGpu1;
  dev.readings.back()[DeviceField::kUtilizationRatio] = 0.9;  // no SM active etc. from NVML
  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  dev.processes.clear();
  apportioner.update(agent_snapshot({a}), dev);
  EXPECT_TRUE(apportioner.results().empty());
}

TEST(WorkloadEfficiency, ProcessesOfNoWorkloadKeepTheirShare) {
  auto a = workload("a", {100});
  on_gpu(a, "0", kGpu0, 1'000'000'000, 10);
  // pid 999 belongs to no workload the agent knows.
  auto dev = device_snapshot({dcgm(kGpu0, 0, 0.5, 0.25, 0.125, 1.0, 20 * kGiB)},
                             {proc(100, kGpu0, 2ull << 30, 0.25), proc(999, kGpu0, 6ull << 30, 0.75)});
  EfficiencyApportioner apportioner;
  apportioner.update(agent_snapshot({a}), dev);
  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  apportioner.update(agent_snapshot({a}), dev);
  ASSERT_EQ(apportioner.results().size(), 1u);  // the foreign process is not exported
  const auto& e = apportioner.results()[0];
  EXPECT_EQ(e.uuid, kGpu0);
  EXPECT_EQ(e.share, 0.25);  // a is the only active workload, yet not exclusive
  EXPECT_EQ(e[EfficiencyField::kSmActiveRatio], value(0.125, EfficiencySource::kNvml));
  EXPECT_EQ(e[EfficiencyField::kSmOccupancyRatio], value(0.0625, EfficiencySource::kNvml));
  EXPECT_EQ(e[EfficiencyField::kTensorActiveRatio], value(0.03125, EfficiencySource::kNvml));
  EXPECT_EQ(e[EfficiencyField::kDramActiveRatio], value(0.25, EfficiencySource::kNvml));
  EXPECT_EQ(e[EfficiencyField::kGpuMemoryUsedBytes], value(2 * kGiB, EfficiencySource::kNvml));  // not 20 GiB

  // Without SM samples the foreign process cannot be weighed: by default the
  // eBPF split folds it in; strict options export no ratios for that GPU.
  dev.processes = {proc(100, kGpu0, std::nullopt), proc(999, kGpu0, 6ull << 30)};
  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  apportioner.update(agent_snapshot({a}), dev);
  ASSERT_EQ(apportioner.results().size(), 1u);
  EXPECT_EQ(apportioner.results()[0][EfficiencyField::kSmActiveRatio], value(0.5, EfficiencySource::kApportioned));
  EXPECT_FALSE(apportioner.results()[0][EfficiencyField::kGpuMemoryUsedBytes]);  // N/A from NVML, GPU shared

  EfficiencyOptions strict;
  strict.ebpf_split_with_foreign_processes = false;
  ActivityBaseline before = ActivityBaseline::of(agent_snapshot({a}));
  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  EXPECT_TRUE(apportion_efficiency(agent_snapshot({a}), dev, strict, &before).empty());
}

TEST(WorkloadEfficiency, MemoryComesFromNvmlPerProcessEvenWhenIdle) {
  auto a = workload("a", {100, 101});
  auto b = workload("b", {200});
  on_gpu(a, "0", kGpu0, 1'000'000'000, 10);
  // b holds memory on GPU0 and GPU1 but the agent never tied it to a GPU.
  auto dev = device_snapshot(
      {dcgm(kGpu0, 0, 0.5, 0.5, 0.5, 0.5, 30 * kGiB), dcgm(kGpu1, 1, 0.0, 0.0, 0.0, 0.0, 4 * kGiB)},
      {proc(100, kGpu0, 5ull << 30), proc(101, kGpu0, std::nullopt), proc(200, kGpu0, 7ull << 30),
       proc(200, kGpu1, 3ull << 30)});
  // One update, no interval: memory needs none.
  auto r = apportion_efficiency(agent_snapshot({a, b}), dev, {});
  ASSERT_EQ(r.size(), 3u);
  const auto* ea = find(r, "a", kGpu0);
  const auto* eb0 = find(r, "b", kGpu0);
  const auto* eb1 = find(r, "b", kGpu1);
  ASSERT_TRUE(ea && eb0 && eb1);
  EXPECT_EQ((*ea)[EfficiencyField::kGpuMemoryUsedBytes], value(5 * kGiB, EfficiencySource::kNvml));
  EXPECT_EQ((*eb0)[EfficiencyField::kGpuMemoryUsedBytes], value(7 * kGiB, EfficiencySource::kNvml));
  EXPECT_EQ((*eb1)[EfficiencyField::kGpuMemoryUsedBytes], value(3 * kGiB, EfficiencySource::kNvml));
  EXPECT_EQ(eb1->gpu, "1");  // from the device inventory
  for (const auto* e : {ea, eb0, eb1}) {
    EXPECT_FALSE((*e)[EfficiencyField::kSmActiveRatio]) << "no interval, no samples: no ratios";
    EXPECT_FALSE(e->share);
  }
}

TEST(WorkloadEfficiency, MpsInfrastructureNeverTakesAShare) {
  auto mps = workload("mps", {500});
  mps.infrastructure = true;
  auto a = workload("a", {100});
  auto b = workload("b", {200});
  on_gpu(mps, "0", kGpu0, 10'000'000'000, 1000);  // its own CUDA calls: busy more than anyone
  on_gpu(a, "0", kGpu0, 1'000'000'000, 10);
  on_gpu(b, "0", kGpu0, 1'000'000'000, 10);
  auto dev = device_snapshot({dcgm(kGpu0, 0, 0.5, 0.25, 0.125, 1.0, 20 * kGiB)},
                             {proc(500, kGpu0, 1ull << 30), proc(100, kGpu0, std::nullopt),
                              proc(200, kGpu0, std::nullopt)});
  ActivityBaseline before = ActivityBaseline::of(agent_snapshot({mps, a, b}));
  mps.by_gpu[0].usage.counters.busy_ns += 4'000'000'000;
  a.by_gpu[0].usage.counters.busy_ns += 1'000'000'000;
  b.by_gpu[0].usage.counters.busy_ns += 3'000'000'000;

  // eBPF split: the server's busy time is no share; its process is not foreign,
  // so even the strict options split the ratios over the tenants.
  EfficiencyOptions strict;
  strict.ebpf_split_with_foreign_processes = false;
  for (const auto& options : {EfficiencyOptions{}, strict}) {
    auto r = apportion_efficiency(agent_snapshot({mps, a, b}), dev, options, &before);
    ASSERT_EQ(r.size(), 3u);
    const auto* em = find(r, "mps", kGpu0);
    const auto* ea = find(r, "a", kGpu0);
    const auto* eb = find(r, "b", kGpu0);
    ASSERT_TRUE(em && ea && eb);
    EXPECT_EQ(ea->share, 0.25);
    EXPECT_EQ(eb->share, 0.75);
    EXPECT_EQ((*ea)[EfficiencyField::kSmActiveRatio], value(0.125, EfficiencySource::kApportioned));
    EXPECT_EQ((*eb)[EfficiencyField::kSmActiveRatio], value(0.375, EfficiencySource::kApportioned));
    EXPECT_EQ((*eb)[EfficiencyField::kDramActiveRatio], value(0.75, EfficiencySource::kApportioned));
    EXPECT_EQ(sum_of(r, kGpu0, EfficiencyField::kSmActiveRatio), 0.5);
    // The server: its own measured memory only, no share, no ratio.
    EXPECT_FALSE(em->share);
    EXPECT_EQ(em->basis, ShareBasis::kNone);
    for (auto f : {EfficiencyField::kSmActiveRatio, EfficiencyField::kSmOccupancyRatio,
                   EfficiencyField::kTensorActiveRatio, EfficiencyField::kDramActiveRatio})
      EXPECT_FALSE((*em)[f]);
    EXPECT_EQ((*em)[EfficiencyField::kGpuMemoryUsedBytes], value(1 * kGiB, EfficiencySource::kNvml));
  }

  // NVML samples: the server's are its clients' work and stay out of the total.
  dev.processes = {proc(500, kGpu0, 1ull << 30, 0.5), proc(100, kGpu0, std::nullopt, 0.125),
                   proc(200, kGpu0, std::nullopt, 0.375)};
  auto r = apportion_efficiency(agent_snapshot({mps, a, b}), dev, {}, &before);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(find(r, "a", kGpu0)->share, 0.25);
  EXPECT_EQ(find(r, "b", kGpu0)->share, 0.75);
  EXPECT_EQ((*find(r, "a", kGpu0))[EfficiencyField::kSmActiveRatio], value(0.125, EfficiencySource::kNvml));
  EXPECT_EQ((*find(r, "b", kGpu0))[EfficiencyField::kSmActiveRatio], value(0.375, EfficiencySource::kNvml));
  EXPECT_FALSE(find(r, "mps", kGpu0)->share);
  EXPECT_FALSE((*find(r, "mps", kGpu0))[EfficiencyField::kSmActiveRatio]);
  // Only the server has samples: NVML cannot split them; eBPF does.
  dev.processes = {proc(500, kGpu0, 1ull << 30, 0.5), proc(100, kGpu0, std::nullopt),
                   proc(200, kGpu0, std::nullopt)};
  r = apportion_efficiency(agent_snapshot({mps, a, b}), dev, {}, &before);
  EXPECT_EQ((*find(r, "a", kGpu0))[EfficiencyField::kSmActiveRatio], value(0.125, EfficiencySource::kApportioned));
  EXPECT_FALSE((*find(r, "mps", kGpu0))[EfficiencyField::kSmActiveRatio]);

  // One tenant behind the server: it has the GPU to itself (device values),
  // but the device's memory used includes the server's, so it is not the tenant's.
  b.by_gpu[0].usage.counters.busy_ns = before.counters.at({b.workload.id, kGpu0}).busy_ns;  // b idle,
  dev.processes.pop_back();                                                                   // and gone from NVML
  r = apportion_efficiency(agent_snapshot({mps, a, b}), dev, {}, &before);
  ASSERT_EQ(r.size(), 2u);
  const auto* ea = find(r, "a", kGpu0);
  ASSERT_TRUE(ea);
  EXPECT_EQ(ea->basis, ShareBasis::kExclusive);
  EXPECT_EQ((*ea)[EfficiencyField::kSmActiveRatio], value(0.5, EfficiencySource::kDevice));
  EXPECT_EQ((*ea)[EfficiencyField::kDramActiveRatio], value(1.0, EfficiencySource::kDevice));
  EXPECT_FALSE((*ea)[EfficiencyField::kGpuMemoryUsedBytes]);
  EXPECT_EQ((*find(r, "mps", kGpu0))[EfficiencyField::kGpuMemoryUsedBytes], value(1 * kGiB, EfficiencySource::kNvml));
}

TEST(WorkloadEfficiency, MigInstanceJoinsOnlyOnItsOwnUuid) {
  const std::string kMig = "MIG-5c1f2b3a-0000-1111-2222-333344445555";
  auto a = workload("a");
  auto b = workload("b");
  on_gpu(a, "1", kMig, 1'000'000'000, 10);
  on_gpu(b, "1", kGpu1, 1'000'000'000, 10);  // the parent: no whole-GPU reading
  DeviceReading mig = dcgm(kMig, 1, 0.5, 0.25, 0.125, 0.0625, 9 * kGiB);
  mig.gpu_instance_id = "2";
  DeviceReading parent_instance = dcgm(kGpu1, 1, 0.9, 0.9, 0.9, 0.9, 1 * kGiB);
  parent_instance.gpu_instance_id = "3";
  auto dev = device_snapshot({mig, parent_instance});
  ActivityBaseline zero;
  auto r = apportion_efficiency(agent_snapshot({a, b}), dev, {}, &zero);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].uuid, kMig);
  EXPECT_EQ(r[0][EfficiencyField::kSmActiveRatio], value(0.5, EfficiencySource::kDevice));
  EXPECT_EQ(r[0][EfficiencyField::kGpuMemoryUsedBytes], value(9 * kGiB, EfficiencySource::kDevice));
}

TEST(WorkloadEfficiency, ContributorExportsGaugesWithSourceLabels) {
  auto a = workload("a", {100});
  auto b = workload("b", {200});
  on_gpu(a, "0", kGpu0, 0, 0);
  on_gpu(b, "0", kGpu0, 0, 0);
  on_gpu(b, "1", kGpu1, 0, 0);
  std::vector<attribution::AttributionSnapshot> agents;
  agents.push_back(agent_snapshot({a, b}));
  a.by_gpu[0].usage.counters.busy_ns = 1'000'000'000;
  b.by_gpu[0].usage.counters.busy_ns = 3'000'000'000;
  b.by_gpu[1].usage.counters.busy_ns = 1'000'000'000;
  agents.push_back(agent_snapshot({a, b}));
  auto dev = device_snapshot(
      {dcgm(kGpu0, 0, 0.5, 0.25, 0.125, 0.75, 30 * kGiB), dcgm(kGpu1, 1, 0.25, 0.5, 0.0, 0.5, 12 * kGiB)},
      {proc(100, kGpu0, 4ull << 30)});
  size_t agent_calls = 0, device_calls = 0;
  WorkloadEfficiencyMetricsOptions options;
  options.min_interval = std::chrono::milliseconds(0);
  WorkloadEfficiencyMetrics metrics(
      [&] { return agents[std::min(agent_calls++, agents.size() - 1)]; },
      [&] {
        ++device_calls;
        return dev;
      },
      options);
  metrics::ExpositionWriter first;
  metrics.write_metrics(first);  // no interval yet: only NVML memory
  auto samples = parse_exposition(first.text());
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_gpu_memory_used_bytes",
                         {{"workload", a.workload.id}, {"UUID", kGpu0}, {"source", "nvml"}}),
            4 * kGiB);
  EXPECT_FALSE(sample_value(samples, "gpuledger_workload_sm_active_ratio", {}));

  metrics::ExpositionWriter second;
  metrics.write_metrics(second);
  EXPECT_EQ(agent_calls, 2u);
  EXPECT_EQ(device_calls, 2u);
  const std::string& text = second.text();
  EXPECT_NE(text.find("# TYPE gpuledger_workload_sm_active_ratio gauge\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE gpuledger_workload_gpu_memory_used_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("gpuledger_workload_sm_active_ratio{workload=\"k8s/uid-a/cid-a\",pod_uid=\"uid-a\","
                      "container_id=\"cid-a\",namespace=\"ml\",pod=\"pod-a\",container=\"main\",team=\"team-a\","
                      "gpu=\"0\",UUID=\"" +
                      kGpu0 + "\",source=\"apportioned\"} 0.125\n"),
            std::string::npos)
      << text;
  samples = parse_exposition(text);
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_sm_active_ratio",
                         {{"workload", b.workload.id}, {"gpu", "0"}, {"UUID", kGpu0}, {"source", "apportioned"}}),
            0.375);
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_dram_active_ratio",
                         {{"workload", b.workload.id}, {"UUID", kGpu0}, {"source", "apportioned"}}),
            0.5625);
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_sm_occupancy_ratio",
                         {{"workload", b.workload.id}, {"gpu", "1"}, {"UUID", kGpu1}, {"source", "device"}}),
            0.5);
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_tensor_active_ratio",
                         {{"workload", b.workload.id}, {"UUID", kGpu1}, {"source", "device"}}),
            0.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_gpu_memory_used_bytes",
                         {{"workload", b.workload.id}, {"UUID", kGpu1}, {"source", "device"}}),
            12 * kGiB);
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_gpu_memory_used_bytes",
                         {{"workload", a.workload.id}, {"UUID", kGpu0}, {"source", "nvml"}}),
            4 * kGiB);
  EXPECT_FALSE(sample_value(samples, "gpuledger_workload_gpu_memory_used_bytes",
                            {{"workload", b.workload.id}, {"UUID", kGpu0}}));

  // Within min_interval a scrape re-serves the results without new snapshots.
  WorkloadEfficiencyMetrics slow([&] { return agents[agent_calls++ % agents.size()]; }, [&] { return dev; });
  agent_calls = 0;
  metrics::ExpositionWriter s1, s2;
  slow.write_metrics(s1);
  slow.write_metrics(s2);
  EXPECT_EQ(agent_calls, 1u);
  EXPECT_EQ(s1.text(), s2.text());
  slow.update();
  EXPECT_EQ(agent_calls, 2u);
  EXPECT_EQ(slow.results().size(), 3u);
}

TEST(WorkloadEfficiency, NamesAreTheContract) {
  EXPECT_EQ(efficiency_source_name(EfficiencySource::kDevice), "device");
  EXPECT_EQ(efficiency_source_name(EfficiencySource::kNvml), "nvml");
  EXPECT_EQ(efficiency_source_name(EfficiencySource::kApportioned), "apportioned");
  std::vector<std::string_view> names;
  for (const auto& f : efficiency_fields()) names.push_back(f.metric);
  EXPECT_EQ(names, (std::vector<std::string_view>{
                       "gpuledger_workload_sm_active_ratio", "gpuledger_workload_sm_occupancy_ratio",
                       "gpuledger_workload_tensor_active_ratio", "gpuledger_workload_dram_active_ratio",
                       "gpuledger_workload_gpu_memory_used_bytes"}));
}

}  // namespace
}  // namespace gpuledger::node
