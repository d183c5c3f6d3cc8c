// Tenants on NVIDIA's real user-space code (Debian's non-free driver 535
// packages, fetched privately by scripts/fetch-nvidia-libs.sh; no GPU), each
// in a pod-shaped cgroup, against the agent as root with the real BPF
// programs probing the real libcuda.so.1:
//   - an application on the real shared libcudart 11.8: the runtime's failed
//     initialisation (cuInit: CUDA_ERROR_NO_DEVICE) is one error for that
//     workload, and nothing is counted as allocated or launched;
//   - where the toolkit's nvcc is present, programs built with the static
//     CUDA 13 runtime: against driver 535 it fails with "insufficient driver",
//     counted by the runtime probes (symbols kept) and visible as a stripped
//     runtime the probes cannot attach to (stripped); its cuGetExportTable
//     requests are counted either way.
// The libraries are named explicitly (--cuda-lib, LD_LIBRARY_PATH for the
// tenants): a driver installed on the host changes nothing here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "probes/library_discovery.h"
#include "real_nvidia_requirement.h"
#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"
#include "tenant_harness.h"

#ifndef GPULEDGER_REAL_LIBCUDA
#define GPULEDGER_REAL_LIBCUDA ""
#endif

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using simulation::ScopedCgroup;

const std::string kRealLibcuda = GPULEDGER_REAL_LIBCUDA;
const std::string kRealLibcudart = GPULEDGER_REAL_LIBCUDART;
const std::string kRealLibDir = GPULEDGER_REAL_LIBDIR;
const std::string kApp = GPULEDGER_REAL_RUNTIME_APP;
const std::string kStatic13 = GPULEDGER_CUDA13_STATIC_APP;            // "" without nvcc
const std::string kStatic13Stripped = GPULEDGER_CUDA13_STRIPPED_APP;  // "" without nvcc

class RealNvidia : public ::testing::Test {
 protected:
  void SetUp() override {
    GL_REQUIRE_BPF();
    GL_REQUIRE_REAL_NVIDIA(!kRealLibcuda.empty() && fs::exists(kRealLibcuda) && fs::exists(kRealLibcudart));
    attribution::AttributionOptions options;
    options.cuda_libs = {kRealLibcuda};
    options.discover = true;
    options.runtime_probes = probes::RuntimeProbes::kAuto;
    options.scan_interval = std::chrono::milliseconds(200);
    options.classifier.cgroup_roots = {test_cgroup("")};
    agent_ = std::make_unique<attribution::AttributionPlane>(options);
    agent_->start();
  }
  void TearDown() override {
    agent_.reset();
    std::error_code ec;
    fs::remove(mounts().v2 + test_cgroup(""), ec);
  }

  bool runtime_probed(const std::string& file) {
    auto id = probes::file_id_of(file);
    for (const auto& lib : agent_->snapshot().self.runtime_libraries)
      if (lib.file == id) return true;
    return false;
  }

  // Runs `argv` in a pod-shaped cgroup; once it is READY (its runtime has
  // loaded the real driver), `before_go` runs, then it makes its calls.
  nlohmann::json run_pod(const std::string& uid, const std::string& container, const std::vector<std::string>& argv,
                         const std::function<void()>& before_go, std::string* id) {
    ScopedCgroup cg(mounts().v2, test_cgroup("/kubepods/burstable/pod" + uid + "/" + container));
    *id = "k8s/" + uid + "/" + container;
    simulation::Child child(argv, simulation::SpawnOptions{{cg.dir()}, {"LD_LIBRARY_PATH=" + kRealLibDir}, true, true});
    await_ready(child);
    before_go();
    return finish_interactive_tenant(child);
  }

  // The workload's usage once the agent has read it (`ready` holds).
  probes::Usage usage_of(const std::string& id, const std::function<bool(const probes::Usage&)>& ready) {
    probes::Usage found;
    bool seen = eventually(
        [&] {
          auto snap = agent_->snapshot();
          const auto* w = find_workload(snap, id);
          if (!w) return false;
          found = w->usage;
          return ready(found);
        },
        std::chrono::milliseconds(5000));
    EXPECT_TRUE(seen) << id;
    return found;
  }

  std::unique_ptr<attribution::AttributionPlane> agent_;
};

uint64_t total_errors(const probes::Usage& u) {
  uint64_t n = 0;
  for (const auto& [call, count] : u.errors_by_call) n += count;
  return n;
}

std::string errors_text(const probes::Usage& u) {
  std::string out;
  for (const auto& [call, count] : u.errors_by_call) out += call + "=" + std::to_string(count) + " ";
  return out;
}

TEST_F(RealNvidia, TheRealDriverIsProbedInFull) {
  const auto self = agent_->snapshot().self;
  const auto real = probes::file_id_of(kRealLibcuda);
  const probes::LibraryRecord* lib = nullptr;
  for (const auto& l : self.libraries)
    if (l.file == real) lib = &l;
  ASSERT_NE(lib, nullptr) << "the real libcuda is not attached";
  EXPECT_TRUE(lib->probe_failures.empty()) << lib->probe_failures.front();
  // Entry and return probes on the entry points of driver 535.261.03, less
  // the aliases that share an address, less the return probes of launches,
  // asynchronous copies and memsets (counted at entry).
  probes::CallNames names;
  size_t parts = 0;
  for (const auto& spec : probes::plan_probes(probes::read_dynamic_functions(kRealLibcuda), names, {}))
    parts += spec.with_return ? 2 : 1;
  EXPECT_EQ(lib->probes, parts) << "probes attached to the real libcuda";
  EXPECT_GE(lib->probes, 200u);
  std::printf("[ real     ] %zu probe points on %s\n", lib->probes, kRealLibcuda.c_str());
  EXPECT_EQ(self.probe_attach_failures, 0u);
}

TEST_F(RealNvidia, AFailedInitialisationOnTheRealRuntimeIsOneErrorAndNothingElse) {
  std::string id;
  auto result = run_pod(
      "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", std::string(64, 'a'), {kApp, "--ready", "libcudart.so.11.0"},
      [&] { EXPECT_TRUE(eventually([&] { return runtime_probed(kRealLibcudart); }, std::chrono::seconds(5))); }, &id);
  // Without a GPU the real runtime's initialisation fails: cudaErrorNoDevice.
  EXPECT_EQ(result["cudaDriverGetVersion"], 0) << result.dump();
  EXPECT_EQ(result["driver_version"], 12020);
  EXPECT_EQ(result["cudaGetDeviceCount"], 100);
  EXPECT_EQ(result["cudaMalloc"], 100);
  auto u = usage_of(id, [](const probes::Usage& u) { return total_errors(u) > 0; });
  EXPECT_EQ(u.errors_by_call.at("cuInit"), 1u) << errors_text(u);
  EXPECT_EQ(total_errors(u), 1u) << "one failed initialisation, one error: " << errors_text(u);
  EXPECT_EQ(u.counters.allocations, 0u);
  EXPECT_EQ(u.counters.allocated_bytes, 0u);
  EXPECT_EQ(u.counters.launches, 0u);
  EXPECT_EQ(u.counters.launched_threads, 0u);
}

TEST_F(RealNvidia, TheCuda13StaticRuntimeAgainstDriver535IsInsufficientDriverAndCounted) {
  if (kStatic13.empty()) GTEST_SKIP() << "no nvcc in /usr/local/cuda: the CUDA 13 programs are not built here";
  std::string id;
  auto result = run_pod(
      "11112222-3333-4444-9555-666677778888", std::string(64, 'b'), {kStatic13},
      [&] { EXPECT_TRUE(eventually([&] { return runtime_probed(kStatic13); }, std::chrono::seconds(5))); }, &id);
  EXPECT_EQ(result["cudaMalloc"], 35) << "cudaErrorInsufficientDriver: " << result.dump();
  auto u = usage_of(id, [](const probes::Usage& u) { return u.errors_by_call.contains("cudaMalloc"); });
  EXPECT_EQ(u.errors_by_call["cudaMalloc"], 1u) << errors_text(u);
  EXPECT_EQ(u.counters.allocations, 0u);
  EXPECT_EQ(u.counters.launches, 0u);
  uint64_t tables = 0;
  for (const auto& [table, n] : u.export_tables) tables += n;
  EXPECT_GE(tables, 1u) << "the CUDA 13 runtime asks the driver for an export table first";
}

TEST_F(RealNvidia, AStrippedStaticRuntimeIsReportedAsNotProbed) {
  if (kStatic13Stripped.empty()) GTEST_SKIP() << "no nvcc in /usr/local/cuda: the CUDA 13 programs are not built here";
  std::string id;
  auto result = run_pod(
      "aaaabbbb-cccc-4ddd-8eee-ffff00001111", std::string(64, 'c'), {kStatic13Stripped},
      [&] {
        EXPECT_TRUE(eventually([&] { return agent_->snapshot().self.runtime_libraries_stripped == 1; },
                               std::chrono::seconds(5)));
      },
      &id);
  EXPECT_EQ(result["cudaMalloc"], 35) << result.dump();
  EXPECT_FALSE(runtime_probed(kStatic13Stripped));
  // The driver-level probes still see what reaches the driver's exports.
  auto u = usage_of(id, [](const probes::Usage& u) { return !u.export_tables.empty(); });
  EXPECT_EQ(u.counters.allocations, 0u);
  EXPECT_EQ(u.counters.launches, 0u);
}

}  // namespace
}  // namespace gpuledger::testing
