// The NVML client against NVIDIA's real libnvidia-ml (driver 535, fetched by
// scripts/fetch-nvidia-libs.sh) and against the project's simulator: the names
// it looks up are exported by both, and with the real library and no NVIDIA
// kernel driver it says "NVML present, kernel driver not loaded" while the
// device plane keeps running and says so on /metrics.
//
// Hermetic: the library is always named explicitly, and what nvmlInit_v2 must
// answer follows from this machine's kernel driver (/proc/driver/nvidia): none
// loaded, exactly Driver Not Loaded; a loaded one (a GPU node), success when it
// is the fetched version, else the library/kernel version mismatch.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "device/device_plane.h"
#include "device/doctor.h"
#include "device/nvml_client.h"
#include "exposition_parser.h"
#include "probes/elf_symbols.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

using gpuledger::testing::parse_exposition;
using gpuledger::testing::sample_value;

// The names the client looks up that `library` does not export, comma-separated.
std::string missing_exports(const std::string& library) {
  std::set<std::string> exported;
  for (const auto& f : probes::read_dynamic_functions(library)) exported.insert(f.name);
  std::string missing;
  for (auto name : nvml_symbol_names())
    if (!exported.count(std::string(name))) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return missing;
}

TEST(NvmlSymbols, TheSimulatorExportsEveryNameTheClientLooksUp) {
  EXPECT_EQ(nvml_symbol_names().size(), 19u);
  EXPECT_EQ(missing_exports(GPULEDGER_NVML_SIM), "") << "the NVML simulator does not export these";
}

#ifdef GPULEDGER_NVIDIA_REAL_LIBNVML
const std::string kRealNvml = GPULEDGER_NVIDIA_REAL_LIBNVML;

// What nvmlInit_v2 of the fetched library answers on this machine.
NvmlStatus expected_real_status() {
  std::string version = test::read_file("/proc/driver/nvidia/version");
  if (version.empty()) return NvmlStatus::kDriverNotLoaded;
  return version.find(GPULEDGER_NVIDIA_REAL_DRIVER_VERSION) != std::string::npos ? NvmlStatus::kUp
                                                                                  : NvmlStatus::kInitFailed;
}

TEST(NvmlSymbols, TheRealLibraryExportsEveryNameTheClientLooksUp) {
  EXPECT_EQ(missing_exports(kRealNvml), "") << "NVIDIA's " << kRealNvml << " does not export these";
}

TEST(RealNvml, PresentWithoutKernelDriverIsToldApartFromAbsent) {
  NvmlStatus expected = expected_real_status();
  try {
    auto client = NvmlClient::open(kRealNvml);
    EXPECT_EQ(expected, NvmlStatus::kUp) << "nvmlInit_v2 succeeded without a matching kernel driver";
    EXPECT_FALSE(client->is_simulator());
  } catch (const NvmlOpenError& e) {
    EXPECT_EQ(nvml_status_name(e.status()), nvml_status_name(expected)) << e.what();
    if (expected == NvmlStatus::kDriverNotLoaded)
      EXPECT_EQ(std::string(e.what()), "NVML present, kernel driver not loaded: nvmlInit_v2 of " + kRealNvml +
                                           " returned Driver Not Loaded (9)");
    else
      EXPECT_EQ(std::string(e.what()).rfind("NVML present, ", 0), 0u) << e.what();
  }
  try {
    NvmlClient::open(kRealNvml + ".absent");
    FAIL() << "a missing library opened";
  } catch (const NvmlOpenError& e) {
    EXPECT_EQ(e.status(), NvmlStatus::kLibraryAbsent) << e.what();
  }
}

TEST(RealNvml, DoctorSaysPresentKernelDriverNotLoaded) {
  PlaneReport r = judge_nvml(gather_nvml(kRealNvml));
  if (expected_real_status() != NvmlStatus::kDriverNotLoaded) {  // a GPU node: present all the same
    EXPECT_EQ(r.reason.find("NVML absent"), std::string::npos) << r.reason;
    return;
  }
  EXPECT_EQ(r.status, PlaneStatus::kDegraded) << r.reason;
  EXPECT_EQ(r.reason, "NVML present, kernel driver not loaded: nvmlInit_v2 of " + kRealNvml +
                          " returned Driver Not Loaded (9); no GPU readings until the NVIDIA kernel module is "
                          "loaded (the agent retries)");
}

TEST(RealNvml, DevicePlaneKeepsRunningAndSaysWhy) {
  NvmlStatus expected = expected_real_status();
  DevicePlaneOptions options;
  options.nvidia_proc_root = "/nonexistent";
  options.nvml_library = kRealNvml;
  options.nvml_retry_interval = std::chrono::milliseconds(0);
  DevicePlane plane(options);
  plane.start();       // the first poll, then the background thread
  plane.poll_nvml();   // a retry: the library opened and initialised again
  auto snap = plane.snapshot();
  metrics::ExpositionWriter out;
  plane.write_metrics(out);
  plane.stop();
  EXPECT_EQ(nvml_status_name(snap.health.nvml_status), nvml_status_name(expected)) << snap.health.nvml_error;
  EXPECT_EQ(snap.health.nvml_up, expected == NvmlStatus::kUp);
  EXPECT_FALSE(snap.health.nvml_simulator);
  auto samples = parse_exposition(out.text());
  EXPECT_EQ(sample_value(samples, "gpuledger_nvml_up", {}), expected == NvmlStatus::kUp ? 1.0 : 0.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_nvml_simulator", {}), 0.0);
  for (NvmlStatus state : kNvmlStatuses) {
    std::string name(nvml_status_name(state));
    EXPECT_EQ(sample_value(samples, "gpuledger_nvml_state", {{"state", name}}), state == expected ? 1.0 : 0.0) << name;
  }
}
#else
TEST(RealNvml, NeedsTheFetchedLibrary) {
  GTEST_SKIP() << "NVIDIA's libnvidia-ml was not fetched (scripts/fetch-nvidia-libs.sh); under CI=true cmake fails";
}
#endif

}  // namespace
}  // namespace gpuledger::device
