#include <gtest/gtest.h>

#include <thread>

#include "common/error.h"
#include "device/nvml_client.h"
#include "nvml_sim_config.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

const ProcessReading* find(const NvmlPoll& poll, uint32_t pid) {
  for (const auto& p : poll.processes)
    if (p.pid == pid) return &p;
  return nullptr;
}

TEST(NvmlClient, MissingLibraryIsAnErrorWithTheReason) {
  try {
    NvmlClient::open("/nonexistent/libnvidia-ml.so.1");
    FAIL() << "expected Error";
  } catch (const NvmlOpenError& e) {
    EXPECT_EQ(e.status(), NvmlStatus::kLibraryAbsent);
    EXPECT_NE(std::string(e.what()).find("cannot load NVML"), std::string::npos) << e.what();
  }
}

// What NvmlClient::open of the simulator throws with this script.
std::pair<NvmlStatus, std::string> open_failure(const test::TempDir& dir, const std::string& script) {
  test::use_sim_config(dir.write("nvml.json", script));
  try {
    NvmlClient::open(GPULEDGER_NVML_SIM);
  } catch (const NvmlOpenError& e) {
    return {e.status(), e.what()};
  }
  return {NvmlStatus::kUp, ""};
}

// The case and nvmlErrorString of the init result: a present library whose
// kernel driver is not loaded is not an absent one.
TEST(NvmlClient, InitFailureSaysPresentAndCarriesNvmlErrorString) {
  test::TempDir dir;
  auto [status, what] = open_failure(dir, R"({"init_error": 9, "devices": []})");
  EXPECT_EQ(status, NvmlStatus::kDriverNotLoaded);
  EXPECT_EQ(what.rfind("NVML present, kernel driver not loaded: nvmlInit_v2 of ", 0), 0u) << what;
  EXPECT_NE(what.find("(9)"), std::string::npos) << what;
  std::tie(status, what) = open_failure(dir, R"({"init_error": 18, "devices": []})");
  EXPECT_EQ(status, NvmlStatus::kInitFailed);
  EXPECT_EQ(what, std::string("NVML present, nvmlInit_v2 of ") + GPULEDGER_NVML_SIM + " failed: Unknown Error (18)");
}

// nvmlDeviceGetMemoryInfo_v2: used without the driver's reservation, free after it.
TEST(NvmlClient, MemoryComesFromTheV2QueryWithTheReservationApart) {
  test::TempDir dir;
  test::use_sim_config(dir.write("nvml.json", R"({"devices": [
    {"uuid": "GPU-a", "memory": {"total": 1000, "used": 300, "reserved": 50}}]})"));
  auto nvml = NvmlClient::open(GPULEDGER_NVML_SIM);
  auto poll = nvml->poll("node-1");
  ASSERT_EQ(poll.readings.size(), 1u);
  EXPECT_EQ(*poll.readings[0][DeviceField::kMemoryUsedBytes], 300.0);
  EXPECT_EQ(*poll.readings[0][DeviceField::kMemoryFreeBytes], 650.0);
}

TEST(NvmlClient, ReadsInventoryReadingsAndProcessesFromTheSimulator) {
  test::TempDir dir;
  test::use_sim_config(dir.write("nvml.json", test::kTwoGpuSimConfig));
  auto nvml = NvmlClient::open(GPULEDGER_NVML_SIM);
  EXPECT_TRUE(nvml->is_simulator());
  EXPECT_EQ(nvml->device_count(), 2u);
  EXPECT_EQ(nvml->driver_version(), "550.90.07");
  auto poll = nvml->poll("node-1");
  EXPECT_TRUE(poll.errors.empty()) << poll.errors.front();

  ASSERT_EQ(poll.gpus.size(), 2u);
  EXPECT_EQ(poll.gpus[0].uuid, "GPU-3f6a2c1e-8b4d-7e21-9c0a-5d1e2f3a4b5c");
  EXPECT_EQ(poll.gpus[0].model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(poll.gpus[0].pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(poll.gpus[0].minor, 0u);
  EXPECT_EQ(poll.gpus[0].mig_enabled, false);
  EXPECT_EQ(poll.gpus[1].mig_enabled, true);
  EXPECT_EQ(poll.gpus[1].index, 1u);

  ASSERT_EQ(poll.readings.size(), 2u);
  const auto& r0 = poll.readings[0];
  EXPECT_EQ(r0.source, Source::kNvml);
  EXPECT_EQ(r0.hostname, "node-1");
  EXPECT_DOUBLE_EQ(*r0[DeviceField::kUtilizationRatio], 0.97);
  EXPECT_DOUBLE_EQ(*r0[DeviceField::kMemoryUsedBytes], 42949672960.0);
  EXPECT_DOUBLE_EQ(*r0[DeviceField::kMemoryFreeBytes], 85899345920.0 - 42949672960.0);
  EXPECT_DOUBLE_EQ(*r0[DeviceField::kPowerWatts], 312.614);
  EXPECT_DOUBLE_EQ(*r0[DeviceField::kEnergyJoules], 98765432.123);  // mJ counter -> joules
  EXPECT_FALSE(r0[DeviceField::kSmActiveRatio]);  // NVML has no SM activity
  const auto& r1 = poll.readings[1];
  EXPECT_FALSE(r1[DeviceField::kUtilizationRatio]);  // NOT_SUPPORTED: absent
  EXPECT_FALSE(r1[DeviceField::kPowerWatts]);
  EXPECT_FALSE(r1[DeviceField::kEnergyJoules]);  // NOT_SUPPORTED: absent, never 0

  const auto* p = find(poll, 4242);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->gpu_uuid, "GPU-3f6a2c1e-8b4d-7e21-9c0a-5d1e2f3a4b5c");
  EXPECT_EQ(p->used_bytes, 40000000000ull);
  EXPECT_DOUBLE_EQ(*p->sm_util_ratio, 0.55);
  EXPECT_DOUBLE_EQ(*p->mem_util_ratio, 0.20);
  EXPECT_FALSE(p->mps);
  EXPECT_FALSE(p->gpu_instance_id);
  const auto* na = find(poll, 4343);
  ASSERT_TRUE(na);
  EXPECT_FALSE(na->used_bytes);  // NVML_VALUE_NOT_AVAILABLE
  EXPECT_FALSE(na->sm_util_ratio);
  const auto* mps = find(poll, 4444);
  ASSERT_TRUE(mps);
  EXPECT_TRUE(mps->mps);
  EXPECT_EQ(mps->used_bytes, 1048576u);
  EXPECT_DOUBLE_EQ(*mps->sm_util_ratio, 0.05);
  const auto* mig = find(poll, 5000);
  ASSERT_TRUE(mig);
  EXPECT_EQ(mig->gpu_uuid, "GPU-9e8d7c6b-5a49-3827-1605-f4e3d2c1b0a9");
  EXPECT_EQ(mig->gpu_instance_id, 1u);
  EXPECT_EQ(mig->compute_instance_id, 0u);
  EXPECT_FALSE(mig->sm_util_ratio);  // per-process utilisation is NOT_SUPPORTED on MIG
  // 4242 and 4444 sampled at one instant: per process. MIG: no samples, not known.
  EXPECT_EQ(poll.gpus[0].process_samples_split, true);
  EXPECT_EQ(poll.gpus[1].process_samples_split, std::nullopt);
}

TEST(NvmlClient, FollowsScriptChangesAndLostGpus) {
  test::TempDir dir;
  std::string path = dir.write("nvml.json", test::kTwoGpuSimConfig);
  test::use_sim_config(path);
  auto nvml = NvmlClient::open(GPULEDGER_NVML_SIM);
  EXPECT_EQ(nvml->poll("n").processes.size(), 4u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a new mtime
  dir.write("nvml.json", R"({"devices": [{"uuid": "GPU-a", "lost": true},
                                         {"uuid": "GPU-b", "memory": {"total": 100, "used": 1}}]})");
  auto poll = nvml->poll("n");
  EXPECT_TRUE(poll.processes.empty());
  ASSERT_EQ(poll.gpus.size(), 1u);  // the lost one is skipped, the other still read
  EXPECT_EQ(poll.gpus[0].uuid, "GPU-b");
  EXPECT_EQ(poll.errors.size(), 1u);
}

}  // namespace
}  // namespace gpuledger::device
