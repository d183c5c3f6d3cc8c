#include <gtest/gtest.h>

#include <cmath>

#include "device/dcgm_readings.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
const std::string kA100_0 = "GPU-3f6a2c1e-8b4d-7e21-9c0a-5d1e2f3a4b5c";
const std::string kA100_1 = "GPU-9e8d7c6b-5a49-3827-1605-f4e3d2c1b0a9";
const std::string kT4 = "GPU-1c2d3e4f-5a6b-7c8d-9e0f-a1b2c3d4e5f6";

DcgmExtraction extract_fixture(const std::string& name) {
  return extract_dcgm_readings(parse_prometheus_text(test::read_fixture("dcgm-exporter/" + name)));
}

const DeviceReading* find(const DcgmExtraction& x, const std::string& uuid, const std::string& instance = "") {
  for (const auto& r : x.readings)
    if (r.uuid == uuid && r.gpu_instance_id == instance) return &r;
  return nullptr;
}

TEST(DcgmReadings, TwoA100sInBaseUnits) {
  auto x = extract_fixture("two-a100-kubernetes.txt");
  ASSERT_EQ(x.readings.size(), 2u);
  const auto* r0 = find(x, kA100_0);
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->source, Source::kDcgm);
  EXPECT_EQ(r0->gpu_index, 0u);
  EXPECT_EQ(r0->model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(r0->hostname, "gpu-node-a100-01");
  EXPECT_DOUBLE_EQ(*(*r0)[DeviceField::kUtilizationRatio], 0.97);
  EXPECT_DOUBLE_EQ(*(*r0)[DeviceField::kPowerWatts], 312.614);
  ASSERT_TRUE((*r0)[DeviceField::kMemoryUsedBytes]);
  EXPECT_GT(*(*r0)[DeviceField::kMemoryUsedBytes], 0);
  EXPECT_EQ(std::fmod(*(*r0)[DeviceField::kMemoryUsedBytes], kMiB), 0);
  EXPECT_TRUE((*r0)[DeviceField::kTensorActiveRatio]);
  EXPECT_TRUE((*r0)[DeviceField::kDramActiveRatio]);
  EXPECT_TRUE((*r0)[DeviceField::kGraphicsEngineActiveRatio]);
  // This exporter's counters do not include SM_ACTIVE / SM_OCCUPANCY: absent, not 0.
  EXPECT_FALSE((*r0)[DeviceField::kSmActiveRatio]);
  EXPECT_FALSE((*r0)[DeviceField::kSmOccupancyRatio]);
  const auto* r1 = find(x, kA100_1);
  ASSERT_TRUE(r1);
  EXPECT_DOUBLE_EQ(*(*r1)[DeviceField::kMemoryFreeBytes], 81037 * kMiB);
  EXPECT_DOUBLE_EQ(*(*r1)[DeviceField::kMemoryUsedBytes], 8 * kMiB);
  EXPECT_DOUBLE_EQ(*(*r1)[DeviceField::kUtilizationRatio], 0.0);  // a measured 0 stays
  // Inventory from labels: pci bus, minor from "device".
  ASSERT_EQ(x.gpus.size(), 2u);
  EXPECT_EQ(x.gpus[0].pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(x.gpus[0].minor, 0u);
  EXPECT_EQ(x.gpus[1].minor, 1u);
  ASSERT_EQ(x.pods.size(), 1u);
  EXPECT_EQ(x.pods[0].pod, "resnet-train-7d9f8b6c5-x2x7q");
  EXPECT_EQ(x.pods[0].namespace_name, "team-vision");
  EXPECT_EQ(x.pods[0].uuid, kA100_0);
}

TEST(DcgmReadings, VirtualGpuCopiesAreOneReadingNeverSummed) {
  auto x = extract_fixture("t4-time-slicing-virtual-gpus.txt");
  ASSERT_EQ(x.readings.size(), 1u);
  const auto& r = x.readings[0];
  EXPECT_EQ(r.uuid, kT4);
  // Power: two pod copies of 41.287 W -> one device reading of 41.287 W.
  EXPECT_DOUBLE_EQ(*r[DeviceField::kPowerWatts], 41.287);
  // GPU_UTIL / FB_USED: the device series (no pod labels) wins over per-pod values.
  EXPECT_DOUBLE_EQ(*r[DeviceField::kUtilizationRatio], 0.63);
  EXPECT_DOUBLE_EQ(*r[DeviceField::kMemoryUsedBytes], 9120 * kMiB);
  EXPECT_EQ(x.pods.size(), 2u);
}

TEST(DcgmReadings, DisagreeingPodCopiesWithoutDeviceSeriesAreAbsent) {
  auto page = parse_prometheus_text(
      "DCGM_FI_DEV_FB_USED{UUID=\"GPU-x\",gpu=\"0\",pod=\"a\",namespace=\"n\"} 100\n"
      "DCGM_FI_DEV_FB_USED{UUID=\"GPU-x\",gpu=\"0\",pod=\"b\",namespace=\"n\"} 300\n"
      "DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-x\",gpu=\"0\",pod=\"a\",namespace=\"n\"} 70\n"
      "DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-x\",gpu=\"0\",pod=\"b\",namespace=\"n\"} 70\n");
  auto x = extract_dcgm_readings(page);
  ASSERT_EQ(x.readings.size(), 1u);
  EXPECT_FALSE(x.readings[0][DeviceField::kMemoryUsedBytes]);
  EXPECT_DOUBLE_EQ(*x.readings[0][DeviceField::kPowerWatts], 70);
  EXPECT_EQ(x.conflicting_copies, 1u);
}

TEST(DcgmReadings, TotalEnergyMillijoulesBecomeJoules) {
  auto page = parse_prometheus_text(
      "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"GPU-x\",gpu=\"0\"} 7300123456\n"
      "DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-y\",gpu=\"1\"} 70\n");
  auto x = extract_dcgm_readings(page);
  ASSERT_EQ(x.readings.size(), 2u);
  EXPECT_DOUBLE_EQ(*x.readings[0][DeviceField::kEnergyJoules], 7300123.456);
  EXPECT_FALSE(x.readings[1][DeviceField::kEnergyJoules]);
}

TEST(DcgmReadings, OldLabelNamesAndLowercaseHostname) {
  auto x = extract_fixture("hostname-lowercase-old-labels.txt");
  ASSERT_EQ(x.readings.size(), 1u);
  const auto& r = x.readings[0];
  EXPECT_EQ(r.uuid, "GPU-aaaaaaaa-1111-2222-3333-444444444444");
  EXPECT_EQ(r.hostname, "old-node-7");
  EXPECT_DOUBLE_EQ(*r[DeviceField::kSmActiveRatio], 0.7312);
  EXPECT_DOUBLE_EQ(*r[DeviceField::kSmOccupancyRatio], 0.412);
  EXPECT_DOUBLE_EQ(*r[DeviceField::kMemoryUsedBytes], 12288 * kMiB);
  EXPECT_DOUBLE_EQ(*r[DeviceField::kUtilizationRatio], 0.88);
  ASSERT_EQ(x.pods.size(), 1u);
  EXPECT_EQ(x.pods[0].pod, "bert-0");
  EXPECT_EQ(x.pods[0].namespace_name, "nlp");
  EXPECT_EQ(x.pods[0].container, "train");
}

TEST(DcgmReadings, MigInstancesAreSeparateReadings) {
  auto x = extract_fixture("mig-a100.txt");
  ASSERT_EQ(x.readings.size(), 2u);
  const auto* big = find(x, kA100_0, "1");
  const auto* small = find(x, kA100_0, "9");
  ASSERT_TRUE(big && small);
  EXPECT_EQ(big->gpu_instance_profile, "3g.40gb");
  EXPECT_DOUBLE_EQ(*(*big)[DeviceField::kSmActiveRatio], 0.5);
  EXPECT_DOUBLE_EQ(*(*big)[DeviceField::kMemoryUsedBytes], 20480 * kMiB);
  EXPECT_DOUBLE_EQ(*(*small)[DeviceField::kSmActiveRatio], 0.125);
  ASSERT_EQ(x.gpus.size(), 1u);  // one physical GPU
  EXPECT_EQ(x.gpus[0].mig_enabled, true);
}

TEST(DcgmReadings, ReorderedCrlfGarbageStaleAndNonFiniteValues) {
  auto text = test::read_fixture("dcgm-exporter/reordered-crlf-garbage.txt");
  auto page = parse_prometheus_text(text);
  EXPECT_EQ(page.error_count, 3u);  // prose line, bad escape, unterminated label set
  auto x = extract_dcgm_readings(page);
  ASSERT_EQ(x.readings.size(), 1u);
  const auto& r = x.readings[0];
  EXPECT_EQ(r.uuid, "GPU-bbbb");
  EXPECT_EQ(r.gpu_index, 1u);
  EXPECT_DOUBLE_EQ(*r[DeviceField::kPowerWatts], 699.5);
  EXPECT_DOUBLE_EQ(*r[DeviceField::kGraphicsEngineActiveRatio], 0.91);
  EXPECT_DOUBLE_EQ(*r[DeviceField::kMemoryFreeBytes], 1024 * kMiB);
  EXPECT_FALSE(r[DeviceField::kTensorActiveRatio]);   // NaN
  EXPECT_FALSE(r[DeviceField::kUtilizationRatio]);    // +Inf
  EXPECT_FALSE(r[DeviceField::kDramActiveRatio]);     // timestamped 2023: stale
  EXPECT_EQ(x.samples_stale, 1u);
  // The same page read at the time of that timestamp keeps it.
  auto then = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000001000));
  auto fresh = extract_dcgm_readings(page, then);
  EXPECT_DOUBLE_EQ(*fresh.readings[0][DeviceField::kDramActiveRatio], 0.33);
}

// dcgm-exporter renamed `Hostname` to `hostname` (NVIDIA/dcgm-exporter#655, 2026): a page of each spelling,
// otherwise byte for byte the same, gives the same readings, exactly.
const std::string kH100_0 = "GPU-5b1c7d2e-0f3a-4e6b-9c8d-7a6b5c4d3e2f";
const std::string kH100_1 = "GPU-c4d3e2f1-a0b9-4c8d-8e7f-6a5b4c3d2e1f";

void expect_h100_page(const DcgmExtraction& x) {
  ASSERT_EQ(x.readings.size(), 2u);
  EXPECT_EQ(x.samples_used, 20u);
  EXPECT_EQ(x.samples_stale, 0u);
  EXPECT_EQ(x.conflicting_copies, 0u);
  const auto* busy = find(x, kH100_0);
  const auto* idle = find(x, kH100_1);
  ASSERT_TRUE(busy && idle);
  EXPECT_EQ(busy->hostname, "gpu-node-h100-02");
  EXPECT_EQ(idle->hostname, "gpu-node-h100-02");
  EXPECT_EQ(busy->gpu_index, 0u);
  EXPECT_EQ(idle->gpu_index, 1u);
  EXPECT_EQ(busy->model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(busy->gpu_instance_id, "");
  EXPECT_EQ(busy->gpu_instance_profile, "");
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kUtilizationRatio], 0.71);
  EXPECT_EQ(*(*busy)[DeviceField::kMemoryUsedBytes], 40960 * kMiB);
  EXPECT_EQ(*(*busy)[DeviceField::kMemoryFreeBytes], 40119 * kMiB);
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kPowerWatts], 402.518);
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kEnergyJoules], 912345678.901);
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kGraphicsEngineActiveRatio], 0.734102);
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kSmActiveRatio], 0.523817);
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kSmOccupancyRatio], 0.201446);
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kTensorActiveRatio], 0.08731);
  EXPECT_DOUBLE_EQ(*(*busy)[DeviceField::kDramActiveRatio], 0.612004);
  EXPECT_EQ(*(*idle)[DeviceField::kUtilizationRatio], 0.0);  // measured zeros stay zeros
  EXPECT_EQ(*(*idle)[DeviceField::kSmActiveRatio], 0.0);
  EXPECT_EQ(*(*idle)[DeviceField::kMemoryUsedBytes], 1 * kMiB);
  EXPECT_EQ(*(*idle)[DeviceField::kMemoryFreeBytes], 81078 * kMiB);
  EXPECT_DOUBLE_EQ(*(*idle)[DeviceField::kPowerWatts], 71.25);
  EXPECT_DOUBLE_EQ(*(*idle)[DeviceField::kEnergyJoules], 54321.0);
  ASSERT_EQ(x.gpus.size(), 2u);
  EXPECT_EQ(x.gpus[0].uuid, kH100_0);
  EXPECT_EQ(x.gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(x.gpus[0].minor, 0u);
  EXPECT_EQ(x.gpus[1].pci_bus_id, "00000000:2A:00.0");
  EXPECT_EQ(x.gpus[1].minor, 1u);
  EXPECT_EQ(x.gpus[1].origins, (std::vector<std::string>{"dcgm"}));
  EXPECT_FALSE(x.gpus[0].mig_enabled);  // no MIG series: not known
  ASSERT_EQ(x.pods.size(), 1u);
  EXPECT_EQ(x.pods[0].uuid, kH100_0);
  EXPECT_EQ(x.pods[0].namespace_name, "serving");
  EXPECT_EQ(x.pods[0].pod, "vllm-llama-0");
  EXPECT_EQ(x.pods[0].container, "vllm");
}

TEST(DcgmReadings, HostnameInLowerCaseAsExportersWriteItNow) {
  expect_h100_page(extract_fixture("h100-hostname-lowercase.txt"));
}

TEST(DcgmReadings, HostnameInItsOldCapitalSpelling) { expect_h100_page(extract_fixture("h100-hostname-capital.txt")); }

// MIG as dcgm-exporter writes it after the rename: GPU_I_PROFILE and GPU_I_ID
// beside `hostname`, UUID the parent's. A GPU_I_ID of 0 (a 7g.80gb, the whole
// GPU as one instance) is an instance, not the whole GPU.
TEST(DcgmReadings, MigInstancesWithLowercaseHostname) {
  auto x = extract_fixture("mig-h100-hostname-lowercase.txt");
  ASSERT_EQ(x.readings.size(), 3u);
  EXPECT_EQ(x.samples_used, 6u);
  const auto* big = find(x, kH100_0, "2");
  const auto* small = find(x, kH100_0, "9");
  const auto* whole = find(x, kH100_1, "0");
  ASSERT_TRUE(big && small && whole);
  EXPECT_EQ(find(x, kH100_1), nullptr);  // no whole-GPU reading: its one series is instance 0's
  EXPECT_EQ(big->gpu_instance_profile, "3g.40gb");
  EXPECT_EQ(small->gpu_instance_profile, "1g.10gb");
  EXPECT_EQ(whole->gpu_instance_profile, "7g.80gb");
  for (const auto* r : {big, small, whole}) {
    EXPECT_EQ(r->hostname, "mig-node-2");
    EXPECT_EQ(r->model, "NVIDIA H100 80GB HBM3");
  }
  EXPECT_EQ(big->gpu_index, 0u);
  EXPECT_EQ(whole->gpu_index, 1u);
  EXPECT_EQ(*(*big)[DeviceField::kSmActiveRatio], 0.375);
  EXPECT_EQ(*(*big)[DeviceField::kMemoryUsedBytes], 30720 * kMiB);
  EXPECT_EQ(*(*small)[DeviceField::kSmActiveRatio], 0.0625);
  EXPECT_EQ(*(*small)[DeviceField::kMemoryUsedBytes], 512 * kMiB);
  EXPECT_DOUBLE_EQ(*(*whole)[DeviceField::kSmActiveRatio], 0.9);
  EXPECT_EQ(*(*whole)[DeviceField::kMemoryUsedBytes], 71680 * kMiB);
  EXPECT_FALSE((*big)[DeviceField::kUtilizationRatio]);  // not on the page: absent
  // The order is (UUID, GPU_I_ID).
  EXPECT_EQ(&x.readings[0], big);
  EXPECT_EQ(&x.readings[1], small);
  ASSERT_EQ(x.gpus.size(), 2u);
  EXPECT_EQ(x.gpus[0].uuid, kH100_0);
  EXPECT_EQ(x.gpus[0].mig_enabled, true);
  EXPECT_EQ(x.gpus[1].mig_enabled, true);
  EXPECT_EQ(x.gpus[1].minor, 1u);
  ASSERT_EQ(x.pods.size(), 2u);
  EXPECT_EQ(x.pods[0].gpu_instance_id, "2");
  EXPECT_EQ(x.pods[0].pod, "embedder-7f9c8-kq2lp");
  EXPECT_EQ(x.pods[0].namespace_name, "search");
  EXPECT_EQ(x.pods[1].gpu_instance_id, "0");
  EXPECT_EQ(x.pods[1].pod, "llm-pretrain-0");
  EXPECT_EQ(x.pods[1].container, "trainer");
}

// The old capital spelling on MIG (mig-a100.txt), every figure.
TEST(DcgmReadings, MigInstancesWithCapitalHostname) {
  auto x = extract_fixture("mig-a100.txt");
  const auto* big = find(x, kA100_0, "1");
  const auto* small = find(x, kA100_0, "9");
  ASSERT_TRUE(big && small);
  EXPECT_EQ(big->hostname, "mig-node");
  EXPECT_EQ(small->hostname, "mig-node");
  EXPECT_EQ(small->gpu_instance_profile, "1g.10gb");
  EXPECT_EQ(*(*small)[DeviceField::kMemoryUsedBytes], 0.0);
  ASSERT_EQ(x.pods.size(), 1u);
  EXPECT_EQ(x.pods[0].gpu_instance_id, "1");
  EXPECT_EQ(x.pods[0].pod, "p-a");
}

// Without a UUID a series is its host's GPU index; either spelling names the same host.
TEST(DcgmReadings, EitherHostnameSpellingNamesTheSameHost) {
  auto x = extract_dcgm_readings(parse_prometheus_text(
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"n1\"} 10\nDCGM_FI_DEV_FB_USED{gpu=\"0\",hostname=\"n1\"} 2\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",hostname=\"n2\"} 20\n"));
  ASSERT_EQ(x.readings.size(), 2u);
  EXPECT_EQ(x.readings[0].uuid, "gpu-index:n1:0");
  EXPECT_EQ(x.readings[0].hostname, "n1");
  EXPECT_EQ(*x.readings[0][DeviceField::kPowerWatts], 10.0);
  EXPECT_EQ(*x.readings[0][DeviceField::kMemoryUsedBytes], 2 * kMiB);
  EXPECT_EQ(x.readings[1].uuid, "gpu-index:n2:0");
  EXPECT_EQ(*x.readings[1][DeviceField::kPowerWatts], 20.0);
}

TEST(DcgmReadings, SeriesWithoutUuidFallBackToHostAndIndex) {
  auto x = extract_dcgm_readings(parse_prometheus_text(
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"a\"} 10\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"b\"} 20\n"
      "DCGM_FI_DEV_POWER_USAGE{Hostname=\"c\"} 30\n"));
  ASSERT_EQ(x.readings.size(), 2u);  // the one with neither UUID nor gpu is dropped
  EXPECT_TRUE(x.gpus.empty());
}

}  // namespace
}  // namespace gpuledger::device
