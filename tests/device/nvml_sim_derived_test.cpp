// The NVML simulator's "work_directory": per-process SM utilisation and the
// device's derived from the work the driver simulator logged (CUDASIM_WORK_DIR,
// "<start_ns> <end_ns>" lines on CLOCK_MONOTONIC per process), read through
// the NVML client, which integrates the samples (process_sm_time.h).
#include <gtest/gtest.h>
#include <time.h>

#include <filesystem>
#include <thread>

#include "device/nvml_client.h"
#include "nvml_sim_config.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

unsigned long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000'000ULL + static_cast<unsigned long long>(ts.tv_nsec);
}

double sm_total(const NvmlPoll& poll, uint32_t pid) {
  for (const auto& p : poll.process_sm)
    if (p.pid == pid) return p.sm_seconds_total;
  return -1;
}

TEST(NvmlSimDerived, UtilisationFollowsTheWorkTheDriverSimulatorRan) {
  test::TempDir dir;
  const std::string work = dir.write("work/.keep", "");
  const std::string work_dir = std::filesystem::path(work).parent_path().string();
  const unsigned long long now = monotonic_ns();
  // 4242 runs from half a second ago for a minute; 4343 ran a quarter of a second, and is done.
  dir.write("work/4242", std::to_string(now - 500'000'000) + " " + std::to_string(now + 60'000'000'000ULL) + "\n");
  dir.write("work/4343", std::to_string(now - 500'000'000) + " " + std::to_string(now - 400'000'000) + "\n" +
                             std::to_string(now - 350'000'000) + " " + std::to_string(now - 200'000'000) + "\n");
  dir.write("work/not-a-pid", "1 2\n");
  test::use_sim_config(dir.write("nvml.json", R"({"devices": [{"uuid": "GPU-w", "utilization": {"gpu": 0},
      "work_directory": ")" + work_dir + R"("}]})"));
  auto nvml = NvmlClient::open(GPULEDGER_NVML_SIM);
  // The first reads cover the last second: 4242 ran half of it, 4343 a quarter, the device half.
  auto first = nvml->poll("n");
  ASSERT_EQ(first.readings.size(), 1u);
  EXPECT_NEAR(*first.readings[0][DeviceField::kUtilizationRatio], 0.50, 0.02);
  EXPECT_NEAR(sm_total(first, 4242), 0.50, 0.02);  // 50 % x the default 1 s period
  EXPECT_NEAR(sm_total(first, 4343), 0.25, 0.02);
  EXPECT_EQ(first.process_sm.size(), 2u);
  // Then only 4242 runs: 100 % of each period, 4343's total stays.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto second = nvml->poll("n");
  EXPECT_NEAR(*second.readings[0][DeviceField::kUtilizationRatio], 1.0, 0.01);
  EXPECT_NEAR(sm_total(second, 4242) - sm_total(first, 4242), 0.2, 0.03);  // the period: the gap from the cursor
  EXPECT_DOUBLE_EQ(sm_total(second, 4343), sm_total(first, 4343));
}

}  // namespace
}  // namespace gpuledger::device
