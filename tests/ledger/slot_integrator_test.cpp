// The slot integrator alone (slot_integrator.h): device readings as
// time-weighted averages, VRAM byte-seconds split at a window's end, peaks,
// allocation against use, and the next window starting empty.
#include "ledger/slot_integrator.h"

#include <gtest/gtest.h>

namespace gpuledger::ledger {
namespace {

using Streams = std::map<std::pair<std::string, std::string>, StreamReading>;

const GpuSlot kGpu{"GPU-0", "NVIDIA H100 80GB HBM3", std::nullopt, ""};
constexpr uint64_t kGiB = 1ull << 30;

Observation busy_at(double busy, std::optional<double> sm_active = std::nullopt) {
  Observation o;
  o.slots = {kGpu};
  DeviceSample d;
  d.busy_fraction = busy;
  d.efficiency.sm_active = sm_active;
  d.vram_capacity_bytes = 80.0 * kGiB;
  o.device["GPU-0"] = d;
  return o;
}

TEST(SlotIntegrator, DeviceReadingsAreTimeWeightedAverages) {
  SlotIntegrator slots;
  slots.integrate(busy_at(0.25, 0.5), 100, 110, {});
  slots.integrate(busy_at(0.75), 110, 140, {});  // no SM reading: its average is over the 10 s that had one
  const SlotWindow w = slots.window(kGpu, 160).window;
  EXPECT_EQ(w.device_busy_fraction, 0.625);  // (0.25 x 10 + 0.75 x 30) / 40
  EXPECT_EQ(w.device.sm_active, 0.5);
  EXPECT_EQ(w.device.sm_occupancy, std::nullopt);
  EXPECT_EQ(w.vram_capacity_bytes, 80.0 * kGiB);
  EXPECT_EQ(w.slot.uuid, "GPU-0");
}

TEST(SlotIntegrator, AnEmptyOrBackwardIntervalAddsNothing) {
  SlotIntegrator slots;
  slots.integrate(busy_at(0.5), 110, 110, {});
  slots.integrate(busy_at(0.5), 110, 100, {});
  const IntegratedSlot in = slots.window(kGpu, 120);
  EXPECT_EQ(in.window.device_busy_fraction, std::nullopt);
  EXPECT_FALSE(in.busy_from_dcgm);
  EXPECT_FALSE(in.busy_from_nvml);
}

// The caller cuts an interval at the window's end: each window gets its own byte-seconds.
TEST(SlotIntegrator, VramByteSecondsSplitExactlyAtTheWindowEnd) {
  SlotIntegrator slots;
  Streams streams;
  streams[{"a", ""}] = {0, 0, 3 * kGiB, {"GPU-0", "GPU-1"}};  // half on each slot
  streams[{"b", "GPU-0"}] = {0, 0, kGiB, {"GPU-0"}};
  Observation o;
  slots.integrate(o, 110, 120, streams);
  const SlotWindow first = slots.window(kGpu, 120).window;
  slots.next_window();
  slots.integrate(o, 120, 135, streams);
  const SlotWindow second = slots.window(kGpu, 180).window;
  EXPECT_EQ(first.activity.at("a").vram_byte_seconds, 1.5 * kGiB * 10);
  EXPECT_EQ(first.activity.at("b").vram_byte_seconds, 1.0 * kGiB * 10);
  EXPECT_EQ(second.activity.at("a").vram_byte_seconds, 1.5 * kGiB * 15);
  EXPECT_EQ(second.activity.at("b").vram_byte_seconds, 1.0 * kGiB * 15);
  EXPECT_EQ(first.vram_peak_bytes, (std::map<std::string, uint64_t>{{"a", 3 * kGiB / 2}, {"b", kGiB}}));
}

TEST(SlotIntegrator, PeaksAreTheLargestReadingsOfTheWindow) {
  SlotIntegrator slots;
  Observation o;
  o.workloads = {{"a", {}, 0, 0, 0, {}, {}, {{"GPU-0", 5 * kGiB}}}};
  slots.remember_nvml_used(o);
  slots.integrate(o, 100, 110, {{{"a", ""}, {0, 0, 2 * kGiB, {"GPU-0"}}}});
  o.workloads[0].nvml_used_bytes["GPU-0"] = 3 * kGiB;
  slots.remember_nvml_used(o);
  slots.integrate(o, 110, 120, {{{"a", ""}, {0, 0, 4 * kGiB, {"GPU-0"}}}});
  const SlotWindow w = slots.window(kGpu, 120).window;
  EXPECT_EQ(w.vram_peak_bytes.at("a"), 4 * kGiB);
  EXPECT_EQ(w.nvml_vram_peak_bytes.at("a"), 5 * kGiB);
  EXPECT_EQ(w.activity.at("a").vram_byte_seconds, 60.0 * kGiB);  // 2 GiB x 10 s + 4 GiB x 10 s
}

// The device side saw "b" on a slot "a" holds, and "a" on none.
TEST(SlotIntegrator, AllocationAgainstUseInSeconds) {
  SlotIntegrator slots;
  Observation o;
  o.slots = {kGpu};
  o.holders = {{"GPU-0", "a", {}, 1}};
  o.device_use_known = true;
  o.device_use["b"] = {{"ml", "pod-b", "main", "vision"}, {"GPU-0"}};
  slots.integrate(o, 100, 125, {});
  const SlotUse use = slots.window(kGpu, 180).use;
  EXPECT_TRUE(use.known);
  EXPECT_EQ(use.used_unallocated, (std::map<std::string, double>{{"b", 25}}));
  EXPECT_EQ(use.allocated_unused, (std::map<std::string, double>{{"a", 25}}));
  EXPECT_EQ(use.labels.at("b").pod, "pod-b");
}

TEST(SlotIntegrator, TheNextWindowStartsEmpty) {
  SlotIntegrator slots;
  Observation o = busy_at(0.5);
  o.hot_path_probed = false;
  slots.note_probe_set(o);
  slots.integrate(o, 100, 110, {});
  slots.activity("GPU-0", "a").launches = 7;
  const SlotWindow first = slots.window(kGpu, 120).window;
  EXPECT_FALSE(first.launches_probed);
  EXPECT_EQ(first.activity.at("a").launches, 7u);
  slots.next_window();
  const SlotWindow second = slots.window(kGpu, 180).window;
  EXPECT_TRUE(second.launches_probed);
  EXPECT_TRUE(second.activity.empty());
  EXPECT_EQ(second.device_busy_fraction, std::nullopt);
}

// Energy is taken up to the window's end: 100 W held for 20 s.
TEST(SlotIntegrator, TheWindowTakesItsEnergy) {
  SlotIntegrator slots;
  Observation o;
  o.energy["GPU-0"] = {100, std::nullopt, EnergySource::kNvml, 100.0};
  slots.observe_energy(o);
  o.energy["GPU-0"].time = 120;
  slots.observe_energy(o);
  const auto energy = slots.window(kGpu, 120).window.energy;
  ASSERT_TRUE(energy);
  EXPECT_EQ(energy->millijoules, 2'000'000);
  EXPECT_EQ(energy->source, EnergySource::kPowerIntegrated);
}

}  // namespace
}  // namespace gpuledger::ledger
