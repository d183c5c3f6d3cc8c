// --runtime-probes end to end, as root, with the real BPF programs: CUDA
// runtime applications (the simulator's libcudart stand-in, shared and linked
// statically) whose runtime reaches the driver through its exported symbols
// or around them (CUDASIM_PROC_BYPASS=all), against an agent in each mode.
// The expected values are what the application says it did.
#include <gtest/gtest.h>

#include <filesystem>

#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "common/error.h"
#include "probes/elf_symbols.h"
#include "probes/library_discovery.h"
#include "probes/runtime_discovery.h"
#include "probes/runtime_entry_points.h"
#include "probes/static_symbols.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using probes::RuntimeProbes;
using simulation::ScopedCgroup;

const std::string kSharedApp = GPULEDGER_CUDARTSIM;
const std::string kStaticApp = GPULEDGER_CUDARTSIM_STATIC;
const std::string kSharedRuntime = GPULEDGER_CUDART_LIB;
const std::string kUuid0 = "GPU-00000000-1111-2222-3333-444444444444";
const std::string kUuid1 = "GPU-55555555-6666-7777-8888-999999999999";
const std::string kBypass = "CUDASIM_PROC_BYPASS=all";

struct App {
  std::string binary;   // the application
  std::string runtime;  // the file its runtime lives in
};
const App kShared{kSharedApp, kSharedRuntime};
const App kStatic{kStaticApp, kStaticApp};

class RuntimeProbesTest : public ::testing::Test {
 protected:
  void SetUp() override { GL_REQUIRE_BPF(); }
  void TearDown() override {
    agent_.reset();
    std::error_code ec;
    fs::remove(mounts().v2 + test_cgroup(""), ec);
  }

  void start_agent(RuntimeProbes mode, size_t max_libraries = probes::LibraryAttacher::kDefaultMaxLibraries) {
    attribution::AttributionOptions options;
    options.max_libraries = max_libraries;
    options.cuda_libs = {kSimLib};
    options.discover = true;
    options.runtime_probes = mode;
    options.scan_interval = std::chrono::milliseconds(200);
    options.gpu_inventory = [] { return std::vector<identity::GpuIdentity>{{0, kUuid0, 0}, {1, kUuid1, 1}}; };
    mode_ = mode;
    agent_ = std::make_unique<attribution::AttributionPlane>(options);
    agent_->start();
  }

  bool runtime_probed(const std::string& file) {
    auto id = probes::file_id_of(file);
    for (const auto& lib : agent_->snapshot().self.runtime_libraries)
      if (lib.file == id) return true;
    return false;
  }

  // Runs the application in a service-shaped cgroup of its own once the
  // agent covers its runtime (the runtime has loaded the driver by READY).
  // Returns its truth; `id` is set to its workload's id.
  nlohmann::json run(const App& app, const std::string& name, std::vector<std::string> env,
                     std::vector<std::string> args, std::string* id) {
    ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/" + name + ".service"));
    *id = "systemd/" + name + ".service";
    std::vector<std::string> argv = {app.binary, "--ready", "--rounds", "3"};
    argv.insert(argv.end(), args.begin(), args.end());
    simulation::Child child(argv, simulation::SpawnOptions{{cg.dir()}, env, true, true});
    await_ready(child);
    if (mode_ != RuntimeProbes::kOff) {
      EXPECT_TRUE(eventually([&] { return runtime_probed(app.runtime); }));
    }
    nlohmann::json truth = finish_interactive_tenant(child);
    EXPECT_EQ(truth.value("launches", 0), 3);
    return truth;
  }

  const attribution::WorkloadView* workload(const std::string& id) {
    static attribution::AttributionSnapshot snap;
    eventually([&] {
      snap = agent_->snapshot();
      return find_workload(snap, id) != nullptr;
    });
    return find_workload(snap, id);
  }

  // Every counter the application's truth names, exact.
  void expect_exact(const std::string& id, const nlohmann::json& truth) {
    const auto* w = workload(id);
    ASSERT_NE(w, nullptr) << id;
    const gl_counters& c = w->usage.counters;
    EXPECT_EQ(c.launches, truth["launches"].get<uint64_t>());
    EXPECT_EQ(c.launched_threads, truth["launched_threads"].get<uint64_t>());
    EXPECT_EQ(c.graph_launches, truth["graph_launches"].get<uint64_t>());
    EXPECT_EQ(c.allocations, truth["allocations"].get<uint64_t>());
    EXPECT_EQ(c.allocated_bytes, truth["allocated_bytes"].get<uint64_t>());
    EXPECT_EQ(c.freed_bytes, truth["freed_bytes"].get<uint64_t>());
    EXPECT_EQ(c.syncs, truth["syncs"].get<uint64_t>());
    const char* directions[] = {"htod", "dtoh", "dtod", "peer", "unknown"};
    for (int d = 0; d < GL_DIR_COUNT; ++d) {
      EXPECT_EQ(c.memcpy_bytes[d], truth["memcpy_bytes"][directions[d]].get<uint64_t>()) << directions[d];
      EXPECT_EQ(c.memcpy_calls[d], truth["memcpy"][directions[d]].get<uint64_t>()) << directions[d];
    }
    uint64_t errors = 0;
    for (const auto& [call, n] : w->usage.errors_by_call) errors += n;
    EXPECT_EQ(errors, 1u) << "the one failing cudaMalloc, counted once";
  }

  // The application's runtime calls that count: launches, graphs,
  // allocations, its two cudaFree, copies and syncs.
  static uint64_t counted_calls(const nlohmann::json& t) {
    uint64_t copies = 0;
    for (const auto& [direction, n] : t["memcpy"].items()) copies += n.get<uint64_t>();
    return t["launches"].get<uint64_t>() + t["graph_launches"].get<uint64_t>() + t["allocations"].get<uint64_t>() +
           2 + copies + t["syncs"].get<uint64_t>();
  }
  uint64_t counted_by_runtime() { return agent_->snapshot().self.kernel_stats[GL_STAT_RUNTIME_COUNTED]; }

  std::string error_call(const std::string& id) {
    const auto* w = workload(id);
    return w && w->usage.errors_by_call.size() == 1 ? w->usage.errors_by_call.begin()->first : "";
  }

  std::unique_ptr<attribution::AttributionPlane> agent_;
  RuntimeProbes mode_ = RuntimeProbes::kAuto;
};

// off: the driver probes alone. Exact where the runtime goes through the
// driver's exported symbols; blind where it goes around them (the gap the
// runtime probes close).
TEST_F(RuntimeProbesTest, OffCountsThroughExportedSymbolsAndMissesTheBypass) {
  start_agent(RuntimeProbes::kOff);
  std::string exported, bypassed;
  auto truth = run(kShared, "rt-off-exported", {}, {}, &exported);
  expect_exact(exported, truth);
  EXPECT_EQ(error_call(exported), "cuMemAlloc_v2");

  run(kShared, "rt-off-bypass", {kBypass}, {}, &bypassed);
  auto snap = agent_->snapshot();
  const auto* w = find_workload(snap, bypassed);
  EXPECT_EQ(w ? w->usage.counters.launches + w->usage.counters.allocations + w->usage.counters.syncs : 0u, 0u);
  EXPECT_TRUE(snap.self.runtime_libraries.empty());
}

// auto: the driver counts what it sees; the runtime level exactly what it
// missed, and the process that went around the exported symbols is reported.
TEST_F(RuntimeProbesTest, AutoIsExactEitherWayAndCountsAtTheRuntimeOnlyWhatTheDriverMissed) {
  start_agent(RuntimeProbes::kAuto);
  std::string exported, bypassed, on_device1;
  auto truth = run(kShared, "rt-auto-exported", {}, {}, &exported);
  expect_exact(exported, truth);
  EXPECT_EQ(error_call(exported), "cuMemAlloc_v2");
  auto snap = agent_->snapshot();
  EXPECT_EQ(snap.self.kernel_stats[GL_STAT_RUNTIME_COUNTED], 0u);
  // Every counted call, and the failing cudaMalloc whose error the driver counted.
  EXPECT_EQ(snap.self.kernel_stats[GL_STAT_RUNTIME_LEFT_TO_DRIVER], counted_calls(truth) + 1);
  EXPECT_EQ(snap.self.runtime_bypass_processes, 0u);

  truth = run(kShared, "rt-auto-bypass", {kBypass}, {}, &bypassed);
  expect_exact(bypassed, truth);
  EXPECT_EQ(counted_by_runtime(), counted_calls(truth));
  EXPECT_EQ(error_call(bypassed), "cudaMalloc");
  EXPECT_TRUE(eventually([&] { return agent_->snapshot().self.runtime_bypass_processes == 1; }));

  // Unseen context calls: the device is the runtime's (cudaSetDevice(1)).
  truth = run(kShared, "rt-auto-device1", {kBypass, "CUDASIM_DEVICES=2", "CUDA_VISIBLE_DEVICES=" + kUuid0 + "," + kUuid1},
              {"--device", "1"}, &on_device1);
  expect_exact(on_device1, truth);
  EXPECT_TRUE(eventually([&] {
    const auto* w = workload(on_device1);
    return w && w->by_gpu.size() == 1 && w->by_gpu[0].uuid == kUuid1;
  }, std::chrono::milliseconds(10000))) << "every count on ordinal 1, the second visible GPU";
}

// on: the runtime level counts every runtime call; the driver probes skip the
// calls nested in one, so nothing counts twice.
TEST_F(RuntimeProbesTest, OnCountsEveryRuntimeCallOnceEitherWay) {
  start_agent(RuntimeProbes::kOn);
  std::string exported, bypassed;
  auto truth = run(kShared, "rt-on-exported", {}, {"--ptsz"}, &exported);
  expect_exact(exported, truth);
  EXPECT_EQ(counted_by_runtime(), counted_calls(truth)) << "every call counted at the runtime level";
  EXPECT_EQ(error_call(exported), "cudaMalloc");
  EXPECT_EQ(agent_->snapshot().self.runtime_bypass_processes, 0u);

  truth = run(kShared, "rt-on-bypass", {kBypass}, {}, &bypassed);
  expect_exact(bypassed, truth);
  EXPECT_EQ(counted_by_runtime(), 2 * counted_calls(truth));
}

// nvcc's default: the runtime linked into the executable, found by the
// symbols it kept (.symtab), probed in that file.
// Issue 10's library lifecycle holds for runtime files too: a copy of the
// runtime (an image's libcudart) is probed while a process maps it, and once
// nothing maps it and it is deleted (the image removed) its probes and
// descriptor go, so the runtime's garbage collection can free it.
TEST_F(RuntimeProbesTest, ADeletedRuntimeCopyNoProcessMapsIsDetached) {
  start_agent(RuntimeProbes::kAuto);
  const fs::path dir = fs::temp_directory_path() / ("gpuledger-rt-copy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path copy = dir / fs::path(kSharedRuntime).filename();
  fs::copy_file(kSharedRuntime, copy, fs::copy_options::overwrite_existing);
  const auto copy_id = probes::file_id_of(copy.string()).value();
  std::string id;
  const auto truth = run(App{kSharedApp, copy.string()}, "rt-copy", {kBypass, "LD_LIBRARY_PATH=" + dir.string()}, {}, &id);
  expect_exact(id, truth);  // counted at the copy's runtime probes: the driver saw none of it
  EXPECT_EQ(counted_by_runtime(), counted_calls(truth));
  EXPECT_EQ(agent_->snapshot().self.runtime_libraries_detached, 0u) << "still there: kept";

  fs::remove(copy);  // unmapped (the process has exited) and deleted: detached at the next scan
  EXPECT_TRUE(eventually([&] {
    for (const auto& lib : agent_->snapshot().self.runtime_libraries)
      if (lib.file == copy_id) return false;
    return true;
  }, std::chrono::milliseconds(5000)));
  EXPECT_EQ(agent_->snapshot().self.runtime_libraries_detached, 1u);
  fs::remove_all(dir);
}

// A tenant making runtime copies meets the bound (--max-libraries, runtime
// files apart from the driver's): the copy past it is refused and counted,
// and probed once a deleted copy makes room - before its application's calls.
// Runtime files other processes on this machine hold with a driver mapped (a
// CUDA service on a GPU node): each takes a runtime slot of the bound too.
size_t runtimes_in_use_elsewhere() {
  std::set<probes::FileId> drivers;
  for (const auto& path : probes::default_driver_library_paths())
    if (auto id = probes::file_id_of(path)) drivers.insert(*id);
  std::set<probes::FileId> runtimes;
  for (const auto& c : probes::scan_runtime_candidates("/proc", drivers)) {
    std::vector<probes::ElfFunction> fns;
    try {
      fns = probes::read_dynamic_functions(c.mapping.path);
      auto statics = probes::read_static_functions(c.mapping.path);
      fns.insert(fns.end(), statics.begin(), statics.end());
    } catch (const Error&) {
      continue;
    }
    probes::CallNames names(GL_RUNTIME_CALL_BASE, GL_MAX_CALLS);
    if (!probes::plan_runtime_probes(fns, names).empty()) runtimes.insert(c.mapping.printed);
  }
  return runtimes.size();
}

TEST_F(RuntimeProbesTest, RuntimeCopiesMeetABoundAndADeletedOneMakesRoom) {
  start_agent(RuntimeProbes::kAuto, 1 + runtimes_in_use_elsewhere());
  const fs::path base = fs::temp_directory_path() / ("gpuledger-rt-bound-" + std::to_string(::getpid()));
  const fs::path dir_a = base / "a", dir_b = base / "b";
  const std::string name = fs::path(kSharedRuntime).filename();
  for (const auto& dir : {dir_a, dir_b}) {
    fs::create_directories(dir);
    fs::copy_file(kSharedRuntime, dir / name, fs::copy_options::overwrite_existing);
  }
  auto tenant = [&](const std::string& unit, const fs::path& dir) {
    auto cg = std::make_unique<ScopedCgroup>(mounts().v2, test_cgroup("/system.slice/" + unit + ".service"));
    auto child = std::make_unique<simulation::Child>(
        std::vector<std::string>{kSharedApp, "--ready", "--rounds", "3"},
        simulation::SpawnOptions{{cg->dir()}, {kBypass, "LD_LIBRARY_PATH=" + dir.string()}, true, true});
    await_ready(*child);
    return std::pair{std::move(cg), std::move(child)};
  };
  auto [cg_a, a] = tenant("rt-bound-a", dir_a);
  ASSERT_TRUE(eventually([&] { return runtime_probed((dir_a / name).string()); }));
  auto [cg_b, b] = tenant("rt-bound-b", dir_b);
  ASSERT_TRUE(eventually([&] { return agent_->snapshot().self.runtime_library_limit_rejections >= 1; }));
  EXPECT_FALSE(runtime_probed((dir_b / name).string())) << "past the bound";

  const auto truth_a = finish_interactive_tenant(*a);
  fs::remove(dir_a / name);  // unmapped and deleted: detached, and b's copy gets its place
  ASSERT_TRUE(eventually([&] { return runtime_probed((dir_b / name).string()); }, std::chrono::milliseconds(5000)));
  EXPECT_FALSE(runtime_probed((dir_a / name).string()));
  EXPECT_EQ(agent_->snapshot().self.runtime_libraries_detached, 1u);
  const auto truth_b = finish_interactive_tenant(*b);
  expect_exact("systemd/rt-bound-a.service", truth_a);
  expect_exact("systemd/rt-bound-b.service", truth_b);
  EXPECT_EQ(counted_by_runtime(), counted_calls(truth_a) + counted_calls(truth_b));
  fs::remove_all(base);
}

TEST_F(RuntimeProbesTest, StaticallyLinkedRuntimeIsFoundByItsSymbolsAndCountedExactly) {
  start_agent(RuntimeProbes::kAuto);
  std::string bypassed, exported;
  auto truth = run(kStatic, "rt-static-bypass", {kBypass}, {}, &bypassed);
  expect_exact(bypassed, truth);
  EXPECT_EQ(counted_by_runtime(), counted_calls(truth));
  truth = run(kStatic, "rt-static-exported", {}, {"--ptsz"}, &exported);
  expect_exact(exported, truth);
  EXPECT_EQ(counted_by_runtime(), counted_calls(truth)) << "none more: the driver saw them";
  EXPECT_EQ(error_call(exported), "cuMemAlloc_v2");
}

// A runtime entry point that calls another (cudaMemcpy -> the exported
// cudaMemcpyAsync): the inner one is nested in the outer's frame and counts
// nothing, at either level; the runtime level counts exactly the
// application's calls where it counts at all.
TEST_F(RuntimeProbesTest, ANestedRuntimeCallCountsOnceInEveryMode) {
  for (auto mode : {RuntimeProbes::kOn, RuntimeProbes::kAuto}) {
    start_agent(mode);
    for (bool bypass : {false, true}) {
      std::string id, name = std::string("rt-nested-") + (mode == RuntimeProbes::kOn ? "on" : "auto") +
                                 (bypass ? "-bypass" : "");
      SCOPED_TRACE(name);
      std::vector<std::string> env = {"CUDARTSIM_NESTED=1"};
      if (bypass) env.push_back(kBypass);
      uint64_t before = counted_by_runtime();
      auto truth = run(kShared, name, env, {}, &id);
      expect_exact(id, truth);
      EXPECT_EQ(counted_by_runtime() - before, mode == RuntimeProbes::kAuto && !bypass ? 0u : counted_calls(truth));
    }
    agent_.reset();
  }
}

}  // namespace
}  // namespace gpuledger::testing
