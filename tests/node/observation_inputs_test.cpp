#include "node/observation_inputs.h"

#include <gtest/gtest.h>

namespace gpuledger::node {
namespace {
using namespace gpuledger::ledger;

kubernetes::GpuAllocation alloc(const std::string& ns, const std::string& pod, const std::string& resource,
                                const std::string& uuid, kubernetes::Sharing sharing, const std::string& mig = "") {
  kubernetes::GpuAllocation a;
  a.namespace_name = ns;
  a.pod = pod;
  a.container = "main";
  a.resource = resource;
  a.device_id = uuid;
  a.device.uuid = uuid;
  a.device.sharing = sharing;
  a.device.mig_instance = mig;
  return a;
}

device::DeviceSnapshot devices() {
  device::DeviceSnapshot d;
  device::GpuInfo a, b;
  a.uuid = "GPU-a";
  a.model = "NVIDIA H100 80GB HBM3";
  a.pci_bus_id = "00000000:07:00.0";
  b.uuid = "GPU-b";
  b.model = "NVIDIA H100 80GB HBM3";
  b.pci_bus_id = "00000000:08:00.0";
  b.mig_enabled = true;
  d.gpus = {a, b};
  device::DeviceReading dcgm;
  dcgm.source = device::Source::kDcgm;
  dcgm.uuid = "GPU-a";
  dcgm[device::DeviceField::kSmActiveRatio] = 0.4;
  device::DeviceReading nvml;
  nvml.source = device::Source::kNvml;
  nvml.uuid = "GPU-a";
  nvml[device::DeviceField::kUtilizationRatio] = 0.9;
  nvml[device::DeviceField::kSmActiveRatio] = 0.1;  // DCGM's wins
  d.readings = {dcgm, nvml};
  return d;
}

TEST(AgentInputs, SlotsHoldersAndDeviceSamples) {
  std::vector<kubernetes::GpuAllocation> allocs = {
      alloc("ml", "trainer", "nvidia.com/gpu", "GPU-a", kubernetes::Sharing::kExclusive),
      alloc("ml", "small", "nvidia.com/mig-3g.40gb", "MIG-x", kubernetes::Sharing::kMig),
  };
  attribution::AttributionSnapshot snap;
  attribution::WorkloadView v;
  v.workload.id = "k8s/uid-1/c1";
  v.names = {"ml", "trainer", "main", "vision"};
  snap.workloads = {v};
  PriceBook prices;
  auto slots = slots_from(devices(), allocs, prices);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[0], (GpuSlot{"GPU-a", "NVIDIA H100 80GB HBM3", std::nullopt, ""}));
  // The MIG GPU: 7 slices, 3 allocated -> the parent is a slot for the 4 free ones.
  EXPECT_EQ(slots[1], (GpuSlot{"GPU-b", "NVIDIA H100 80GB HBM3", "4g.unallocated", "GPU-b"}));
  EXPECT_EQ(slots[2].uuid, "MIG-x");
  EXPECT_EQ(slots[2].mig_profile, "3g.40gb");
  EXPECT_EQ(slots[2].parent_uuid, "GPU-b");
  EXPECT_EQ(slots[2].model, "NVIDIA H100 80GB HBM3");

  auto holders = holders_from(allocs, snap);
  ASSERT_EQ(holders.size(), 2u);
  EXPECT_EQ(holders[0].account, "k8s/uid-1/c1");
  EXPECT_EQ(holders[0].labels.team, "vision");
  EXPECT_EQ(holders[1].account, "k8s/ml/small/main");  // never used CUDA: named from the allocation

  auto dev = device_samples(devices());
  ASSERT_EQ(dev.count("GPU-a"), 1u);
  EXPECT_DOUBLE_EQ(*dev["GPU-a"].busy_fraction, 0.9);
  EXPECT_DOUBLE_EQ(*dev["GPU-a"].efficiency.sm_active, 0.4);
  EXPECT_FALSE(dev["GPU-a"].efficiency.tensor_active);

  Observation o = make_observation(1.0, snap, devices(), allocs, true, prices);
  EXPECT_EQ(o.slots.size(), 3u);
  EXPECT_EQ(o.workloads.size(), 1u);
  EXPECT_TRUE(o.energy.empty());  // no energy counter nor power: unknown
}

// The seam's share becomes the holder's weight (its allocated share); a share
// the allocation could not tell counts as the whole device. The GPU's memory
// (used + free) is its VRAM capacity.
TEST(AgentInputs, HolderWeightsAreAllocatedSharesAndCapacityIsRead) {
  auto hami = alloc("ml", "a", "nvidia.com/gpu", "GPU-a", kubernetes::Sharing::kExclusive);
  hami.share = 0.3;
  hami.mode = "fraction";
  auto replica = alloc("ml", "b", "nvidia.com/gpu.shared", "GPU-a", kubernetes::Sharing::kReplicas);
  replica.share = 0.25;
  replica.mode = "time-slicing";
  auto unknown = alloc("ml", "c", "nvidia.com/gpu", "GPU-a", kubernetes::Sharing::kExclusive);
  unknown.share = 0;
  auto holders = holders_from({hami, replica, unknown}, attribution::AttributionSnapshot{});
  ASSERT_EQ(holders.size(), 3u);
  EXPECT_DOUBLE_EQ(holders[0].weight, 0.3);
  EXPECT_DOUBLE_EQ(holders[1].weight, 0.25);
  EXPECT_DOUBLE_EQ(holders[2].weight, 1.0);  // a placeholder, marked:
  EXPECT_TRUE(holders[0].share_known);
  EXPECT_TRUE(holders[1].share_known);
  EXPECT_FALSE(holders[2].share_known);
  unknown.share = 0.5;
  unknown.share_known = false;  // the sources could not tell the replicas
  EXPECT_FALSE(holders_from({unknown}, attribution::AttributionSnapshot{})[0].share_known);
  EXPECT_DOUBLE_EQ(holders_from({unknown}, attribution::AttributionSnapshot{})[0].weight, 1.0);

  auto d = devices();
  d.readings[1][device::DeviceField::kMemoryUsedBytes] = 10e9;
  d.readings[1][device::DeviceField::kMemoryFreeBytes] = 70e9;
  auto dev = device_samples(d);
  EXPECT_DOUBLE_EQ(*dev["GPU-a"].vram_capacity_bytes, 80e9);
}

TEST(AgentInputs, EnergyReadingsPreferTheDcgmCounter) {
  device::DeviceSnapshot d = devices();
  d.readings[0][device::DeviceField::kEnergyJoules] = 5000.0;  // DCGM, GPU-a
  d.readings[1][device::DeviceField::kEnergyJoules] = 7000.0;  // NVML, GPU-a
  d.readings[1][device::DeviceField::kPowerWatts] = 250.0;
  device::DeviceReading mig;  // the MIG-enabled GPU: never metered as a whole
  mig.source = device::Source::kNvml;
  mig.uuid = "GPU-b";
  mig[device::DeviceField::kPowerWatts] = 400.0;
  d.readings.push_back(mig);
  auto e = energy_readings(42.0, d);
  ASSERT_EQ(e.size(), 1u);
  const EnergyReading& a = e.at("GPU-a");
  EXPECT_EQ(a.time, 42.0);
  EXPECT_EQ(a.counter_joules, 5000.0);
  EXPECT_EQ(a.counter_source, EnergySource::kDcgm);
  EXPECT_EQ(a.power_watts, 250.0);  // DCGM has no power here: NVML's
}

}  // namespace
}  // namespace gpuledger::node

namespace gpuledger::node {
namespace {
using namespace gpuledger::ledger;

// NVML's per-process used memory goes to the workload whose process it is
// (by host pid), per GPU; a process nobody owns, or with no figure, adds nothing.
TEST(AgentInputs, NvmlProcessMemoryGoesToItsWorkload) {
  attribution::AttributionSnapshot snap;
  attribution::WorkloadView v;
  v.workload.id = "k8s/uid-1/c1";
  v.processes = {{100, "python", 0}, {101, "python", 0}};
  snap.workloads = {v};
  device::DeviceSnapshot d = devices();
  device::ProcessReading p1, p2, stranger, unknown;
  p1.pid = 100, p1.gpu_uuid = "GPU-a", p1.used_bytes = 3'000'000'000;
  p2.pid = 101, p2.gpu_uuid = "GPU-a", p2.used_bytes = 500'000'000;
  stranger.pid = 999, stranger.gpu_uuid = "GPU-a", stranger.used_bytes = 7'000'000'000;
  unknown.pid = 100, unknown.gpu_uuid = "GPU-b";  // NVML said N/A
  d.processes = {p1, p2, stranger, unknown};
  Observation o = make_observation(1.0, snap, d, {}, false, PriceBook{});
  ASSERT_EQ(o.workloads.size(), 1u);
  EXPECT_EQ(o.workloads[0].nvml_used_bytes, (std::map<std::string, uint64_t>{{"GPU-a", 3'500'000'000}}));
}

}  // namespace
}  // namespace gpuledger::node
