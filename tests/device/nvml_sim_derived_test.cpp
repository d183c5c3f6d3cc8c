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

// "process_samples": "one_per_period", as NVIDIA's driver 580 on an H200
// (docs/gpu-validation.md): one sample per 200 ms period, given to the process
// that ran most of it, with the whole GPU's utilisation. Two processes taking
// turns, never sampled at one instant: the client says the samples do not
// split the GPU.
TEST(NvmlSimDerived, OnePerPeriodGivesEachPeriodToOneProcessWithTheWholeGpu) {
  test::TempDir dir;
  const std::string work = dir.write("work/.keep", "");
  const std::string work_dir = std::filesystem::path(work).parent_path().string();
  // The simulated driver's periods are 200 ms of CLOCK_MONOTONIC: the work
  // follows them, from the start of the current one (early in it, so the
  // read comes before it ends).
  constexpr unsigned long long kPeriod = 200'000'000ULL;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (monotonic_ns() % kPeriod > kPeriod / 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const unsigned long long now = monotonic_ns() / kPeriod * kPeriod;
  auto at = [&](long long ms) { return std::to_string(static_cast<long long>(now) + ms * 1'000'000LL); };
  // The last second's five periods: 4242 runs the 1st, 3rd and 5th (and on), 4343 the others.
  dir.write("work/4242", at(-1000) + " " + at(-800) + "\n" + at(-600) + " " + at(-400) + "\n" + at(-200) + " " +
                             at(60'000) + "\n");
  dir.write("work/4343", at(-800) + " " + at(-600) + "\n" + at(-400) + " " + at(-200) + "\n");
  test::use_sim_config(dir.write("nvml.json", R"({"devices": [{"uuid": "GPU-w", "utilization": {"gpu": 0},
      "process_samples": "one_per_period", "work_directory": ")" + work_dir + R"("}]})"));
  auto nvml = NvmlClient::open(GPULEDGER_NVML_SIM);
  auto poll = nvml->poll("n");
  ASSERT_EQ(poll.gpus.size(), 1u);
  EXPECT_EQ(poll.gpus[0].process_samples_split, false);
  EXPECT_NEAR(sm_total(poll, 4242), 0.6, 0.03);  // three periods of 0.2 s at the whole GPU's 100 %
  EXPECT_NEAR(sm_total(poll, 4343), 0.4, 0.03);

  // Scripted: the listed processes in turn, each sample their sum.
  test::use_sim_config(dir.write("nvml2.json", R"({"devices": [{"uuid": "GPU-s", "process_samples": "one_per_period",
      "process_utilization": [{"pid": 7, "sm": 30}, {"pid": 8, "sm": 20}]}]})"));
  auto scripted = NvmlClient::open(GPULEDGER_NVML_SIM)->poll("n");
  ASSERT_EQ(scripted.gpus.size(), 1u);
  EXPECT_EQ(scripted.gpus[0].process_samples_split, false);
  EXPECT_NEAR(sm_total(scripted, 7), 2 * 0.5 * 0.2, 1e-9);  // two samples of 50 % at the 0.2 s period
  EXPECT_NEAR(sm_total(scripted, 8), 2 * 0.5 * 0.2, 1e-9);
}

}  // namespace
}  // namespace gpuledger::device
