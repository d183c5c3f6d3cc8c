// Issue 10, item 1: a restart lost everything - counters started again at 0,
// contexts created before it lost their GPU, live VRAM dropped to 0, and
// calls made while the agent was down were gone. Here the agent binary (real
// BPF, the simulated driver and NVML) pins its data plane in a bpffs
// directory of this test's own, is killed (SIGKILL, or stopped with SIGTERM)
// while a tenant keeps launching, and is started again on the same pins.
#include <bpf/bpf.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "bpf_requirement.h"
#include "exposition_parser.h"
#include <nlohmann/json.hpp>

#include "probes/pin_store.h"
#include "reliability_support.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::vector<std::string> agent_args(const Scratch& s, const PinDir& pins, bool per_probe_links = false) {
  write_simulated_node(s, 10);
  std::vector<std::string> args = {"--no-discovery", "--cuda-lib", sim_library(), "--no-nvml=false", "--nvml-lib",
                                   nvml_sim_library(), "--nvml-interval-ms", "200", "--store", "",
                                   "--probe-set", "full",  // launches counted (reliability_support.h says why)
                                   "--keep-pins-on-exit",  // SIGTERM: a restart, not a removal
                                   "--bpf-pin-dir", pins.path()};  // last: a test points it elsewhere
  if (per_probe_links) args.push_back("--per-probe-links");
  return args;
}

std::optional<double> metric(int port, const std::string& name, const std::map<std::string, std::string>& match) {
  return sample_value(parse_exposition(get_body(port, "/metrics")), name, match);
}

// Kernel launches of a workload on the simulated GPU (its UUID label known).
double launches_on_gpu(int port, const std::string& id) {
  return metric(port, "gpuledger_cuda_kernel_launches_total", {{"workload", id}, {"UUID", kSimulatedGpu}})
      .value_or(-1);
}

std::string repeated(const std::string& op, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += op + "; ";
  return out;
}

// `per_probe_links`: one perf-event link per probe (--per-probe-links, and
// kernels without multi-uprobe links) instead of one multi-uprobe link per program.
void restart_keeps_everything(int signal, bool per_probe_links) {
  GL_REQUIRE_BPF();
  const std::string tag = std::string(signal == SIGKILL ? "kill" : "term") + (per_probe_links ? "-pp" : "");
  Scratch scratch("restart-" + tag);
  PinDir pins("restart-" + tag);
  const std::string id = "systemd/restart-" + tag + ".service";
  auto first = std::make_unique<Agent>(agent_args(scratch, pins, per_probe_links));
  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/restart-" + tag + ".service"));
  // 1,000 launches with the first agent; 2,000 spread over ~1.5 s across the
  // stop and the restart; 2,000 with the second agent: 5,000 in all.
  simulation::Child tenant({cudasim_binary(), "init; alloc 256m; print-ready; wait-stdin; launch 1 1 1 1 1 1 x1000; "
                                              "print-ready; wait-stdin; " +
                                                  repeated("launch 1 1 1 1 1 1 x4; sleep-ms 3", 500) +
                                                  "print-ready; wait-stdin; launch 1 1 1 1 1 1 x2000; print-ready; "
                                                  "wait-stdin"},
                           {{cg.dir()}, {}, true, true});
  std::vector<double> seen;  // every reading of the counter, across both agents
  auto reading = [&](int port) {
    double v = launches_on_gpu(port, id);
    if (v >= 0) seen.push_back(v);
    return v;
  };

  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);  // its context and 256 MiB exist before the restart
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] { return reading(first->port()) == 1000; }, std::chrono::milliseconds(10000)))
      << get_body(first->port(), "/metrics").substr(0, 3000) << first->log();
  EXPECT_EQ(metric(first->port(), "gpuledger_cuda_memory_live_bytes", {{"workload", id}, {"UUID", kSimulatedGpu}}),
            256 * kMiB);
  EXPECT_EQ(metric(first->port(), "gpuledger_bpf_pins_adopted", {}), 0.0) << "a fresh start";

  tenant.write_line("go");  // launches through the stop and the restart
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto stopped = std::chrono::steady_clock::now();
  stop_agent(first, signal);
  auto second = std::make_unique<Agent>(agent_args(scratch, pins, per_probe_links));
  ASSERT_TRUE(eventually([&] { return reading(second->port()) >= 1000; }, std::chrono::milliseconds(10000)))
      << second->log();
  const auto gap = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stopped).count();
  std::printf("restart gap (%s to /metrics served with the adopted counters): %.0f ms\n", tag.c_str(), gap);
  EXPECT_NE(second->log().find("took over the pinned"), std::string::npos) << second->log();
  EXPECT_EQ(metric(second->port(), "gpuledger_bpf_pins_adopted", {}), 1.0);
  EXPECT_EQ(metric(second->port(), "gpuledger_bpf_pinned_libraries_adopted", {}), 1.0);

  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] { return reading(second->port()) == 5000; }, std::chrono::milliseconds(10000)))
      << "every launch counted, those made while no agent ran too; last reading " << seen.back() << "\n"
      << second->log();
  // The context made before the restart keeps its GPU: no launch went to an unlabelled series.
  EXPECT_EQ(metric(second->port(), "gpuledger_cuda_kernel_launches_total", {{"workload", id}, {"UUID", ""}}),
            std::nullopt);
  EXPECT_EQ(metric(second->port(), "gpuledger_cuda_memory_live_bytes", {{"workload", id}, {"UUID", kSimulatedGpu}}),
            256 * kMiB)
      << "live VRAM allocated before the restart";
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end())) << "the counter went backwards";
  tenant.write_line("go");
  tenant.close_stdin();
  tenant.read_all();
  EXPECT_EQ(tenant.wait(), 0);
}

class Restart : public ::testing::TestWithParam<int> {};

TEST_P(Restart, KeepsCountsCallsMadeWhileDownGpuLabelsAndLiveVram) { restart_keeps_everything(GetParam(), false); }

// The same with a link per probe: those links are pinned and taken over too.
TEST(RestartPerProbeLinks, KeepsCountsCallsMadeWhileDownGpuLabelsAndLiveVram) { restart_keeps_everything(SIGKILL, true); }

// Runtime probes (--runtime-probes) are pinned and taken over like the
// driver's. An application whose runtime reaches the driver around its
// exported symbols - only the runtime probes see its calls - runs whole while
// no agent runs, and the next agent counts all of it.
TEST(RestartRuntimeProbes, CallsOnlyTheRuntimeProbesSeeAreCountedWhileNoAgentRuns) {
  GL_REQUIRE_BPF();
  Scratch scratch("restart-rt");
  PinDir pins("restart-rt");
  const std::string id = "systemd/restart-rt.service";
  std::vector<std::string> args = agent_args(scratch, pins);
  for (const char* a : {"--runtime-probes", "auto", "--cuda-runtime-lib", GPULEDGER_CUDART_LIB}) args.emplace_back(a);
  auto first = std::make_unique<Agent>(args);
  ASSERT_TRUE(eventually([&] { return metric(first->port(), "gpuledger_runtime_libraries_attached", {}) == 1.0; },
                         std::chrono::milliseconds(10000)))
      << first->log();
  stop_agent(first, SIGKILL);

  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/restart-rt.service"));
  simulation::Child app({GPULEDGER_CUDARTSIM, "--rounds", "40"}, {{cg.dir()}, {"CUDASIM_PROC_BYPASS=all"}, false, true});
  const auto truth = nlohmann::json::parse(app.read_all());
  ASSERT_EQ(app.wait(), 0);
  ASSERT_EQ(truth["launches"], 40);

  auto second = std::make_unique<Agent>(args);
  auto launches = [&] {
    double n = 0;
    for (const auto& s : parse_exposition(get_body(second->port(), "/metrics")))
      if (s.name == "gpuledger_cuda_kernel_launches_total" && s.labels.count("workload") && s.labels.at("workload") == id)
        n += s.value;
    return n;
  };
  EXPECT_TRUE(eventually([&] { return launches() == 40; }, std::chrono::milliseconds(10000)))
      << launches() << " of 40 launches made while no agent ran\n"
      << second->log();
  EXPECT_NE(second->log().find("took over the pinned"), std::string::npos) << second->log();
  EXPECT_EQ(metric(second->port(), "gpuledger_bpf_pinned_libraries_adopted", {}), 2.0) << "the driver and the runtime";
}

INSTANTIATE_TEST_SUITE_P(Signals, Restart, ::testing::Values(SIGKILL, SIGTERM),
                         [](const auto& info) { return std::string(info.param == SIGKILL ? "Sigkill" : "Sigterm"); });

// Plants a map pin of the wrong shape.
void plant_map(const std::string& path) {
  int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "gl_planted", 4, 4, 8, nullptr);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(bpf_obj_pin(fd, path.c_str()), 0) << path;
  ::close(fd);
}

TEST(PinLayout, AnIncompatibleLayoutIsReplacedWithItsReason) {
  GL_REQUIRE_BPF();
  Scratch scratch("layout");
  PinDir pins("layout");
  // Another version's layout: replaced, whatever it holds.
  const std::string cuda = pins.path() + "/cuda";  // the CUDA probes' plane
  fs::create_directories(cuda + "/layout-0000000000000000");
  plant_map(cuda + "/layout-0000000000000000/workload_counters");
  auto agent = std::make_unique<Agent>(agent_args(scratch, pins));
  EXPECT_NE(agent->log().find("replaced (layout_version)"), std::string::npos) << agent->log();
  EXPECT_EQ(metric(agent->port(), "gpuledger_bpf_pins_replaced", {{"reason", "layout_version"}}), 1.0);
  EXPECT_EQ(metric(agent->port(), "gpuledger_bpf_pins_adopted", {}), 0.0);
  EXPECT_FALSE(fs::exists(cuda + "/layout-0000000000000000"));
  std::string layout;
  for (const auto& e : fs::directory_iterator(cuda)) layout = e.path().filename();
  ASSERT_TRUE(layout.starts_with("layout-")) << layout;
  stop_agent(agent, SIGKILL);

  // This version's layout with a map of another shape: replaced too.
  const std::string counters = cuda + "/" + layout + "/workload_counters";
  ASSERT_EQ(::unlink(counters.c_str()), 0);
  plant_map(counters);
  agent = std::make_unique<Agent>(agent_args(scratch, pins));
  EXPECT_NE(agent->log().find("replaced (map_mismatch)"), std::string::npos) << agent->log();
  EXPECT_EQ(metric(agent->port(), "gpuledger_bpf_pins_replaced", {{"reason", "map_mismatch"}}), 1.0);
  EXPECT_EQ(metric(agent->port(), "gpuledger_bpf_pins_adopted", {}), 0.0);
  stop_agent(agent, SIGKILL);

  // A missing pin: replaced; the layout then made whole is taken over as it is.
  ASSERT_EQ(::unlink((cuda + "/" + layout + "/context_devices").c_str()), 0);
  agent = std::make_unique<Agent>(agent_args(scratch, pins));
  EXPECT_EQ(metric(agent->port(), "gpuledger_bpf_pins_replaced", {{"reason", "map_missing"}}), 1.0);
  stop_agent(agent, SIGTERM);
  agent = std::make_unique<Agent>(agent_args(scratch, pins));
  EXPECT_EQ(metric(agent->port(), "gpuledger_bpf_pins_adopted", {}), 1.0) << agent->log();
  EXPECT_EQ(get_body(agent->port(), "/metrics").find("gpuledger_bpf_pins_replaced{"), std::string::npos);
}

// A tenant that launched 300 kernels under a first agent, which was then
// killed; its next 300 must be counted once by the agent started after.
class TenantAcrossAKill {
 public:
  explicit TenantAcrossAKill(const std::string& tag)
      : scratch_(tag), pins_(tag), id_("systemd/" + tag + ".service"), tag_(tag) {}
  const Scratch& scratch() const { return scratch_; }
  const PinDir& pins() const { return pins_; }

  void run_first_agent_and_kill_it() {
    auto agent = std::make_unique<Agent>(agent_args(scratch_, pins_));
    cg_ = std::make_unique<simulation::ScopedCgroup>(cgroup_v2(), test_cgroup("/system.slice/" + tag_ + ".service"));
    tenant_ = std::make_unique<simulation::Child>(
        std::vector<std::string>{cudasim_binary(), "launch 1 1 1 1 1 1 x300; print-ready; wait-stdin; "
                                                   "launch 1 1 1 1 1 1 x300; print-ready; wait-stdin"},
        simulation::SpawnOptions{{cg_->dir()}, {}, true, true});
    ASSERT_EQ(tenant_->read_line().rfind("READY", 0), 0u);
    ASSERT_TRUE(eventually([&] { return launches_on_gpu(agent->port(), id_) == 300; },
                           std::chrono::milliseconds(10000)));
    stop_agent(agent, SIGKILL);
  }
  void next_launches_counted_once_by(const Agent& agent) {
    tenant_->write_line("go");
    ASSERT_EQ(tenant_->read_line().rfind("READY", 0), 0u);
    ASSERT_TRUE(eventually([&] { return launches_on_gpu(agent.port(), id_) == 600; },
                           std::chrono::milliseconds(10000)))
        << launches_on_gpu(agent.port(), id_);
    EXPECT_EQ(launches_on_gpu(agent.port(), id_), 600) << "each launch counted once: the old probes are gone";
    tenant_->close_stdin();
    EXPECT_EQ(tenant_->wait(), 0);
  }

 private:
  Scratch scratch_;
  PinDir pins_;
  std::string id_, tag_;
  std::unique_ptr<simulation::ScopedCgroup> cg_;
  std::unique_ptr<simulation::Child> tenant_;
};

TEST(PinLayout, ProbesOfAnotherConfigurationAreReplacedAndTheCountsKept) {
  GL_REQUIRE_BPF();
  TenantAcrossAKill run("reconfigured");
  ASSERT_NO_FATAL_FAILURE(run.run_first_agent_and_kill_it());
  // Settings baked into the programs differ: the probes are made anew, the maps kept.
  auto args = agent_args(run.scratch(), run.pins());
  args.insert(args.end(), {"--runtime-probes", "off", "--max-workloads", "20000"});
  Agent agent(args);
  EXPECT_EQ(metric(agent.port(), "gpuledger_bpf_pins_adopted", {}), 1.0) << agent.log();
  // Another capacity asked: the pinned map (and its counts) kept as it is, and said so.
  EXPECT_EQ(metric(agent.port(), "gpuledger_bpf_map_capacity", {{"map", "workload_counters"}}), 16384.0);
  EXPECT_NE(agent.log().find("the pinned workload_counters holds 16384 entries, not the 20000 asked for: kept"),
            std::string::npos)
      << agent.log();
  EXPECT_EQ(metric(agent.port(), "gpuledger_bpf_pins_replaced", {{"reason", "programs_changed"}}), 1.0);
  EXPECT_EQ(metric(agent.port(), "gpuledger_bpf_pinned_libraries_adopted", {}), 0.0);
  run.next_launches_counted_once_by(agent);
}

TEST(PinLayout, ABrokenPinnedSetOfProbesIsAttachedAnewAndCountsOnce) {
  GL_REQUIRE_BPF();
  TenantAcrossAKill run("broken");
  ASSERT_NO_FATAL_FAILURE(run.run_first_agent_and_kill_it());
  // One link of the library's set goes missing (as if a crash had interrupted its pinning).
  std::string set;
  for (const auto& e : fs::recursive_directory_iterator(run.pins().path() + "/cuda")) {
    const std::string name = e.path().filename();  // <dev>-<ino>-<probes>-<links>
    if (e.is_directory() && std::count(name.begin(), name.end(), '-') == 3) set = e.path();
  }
  ASSERT_FALSE(set.empty());
  ASSERT_EQ(::unlink((set + "/0").c_str()), 0);
  Agent agent(agent_args(run.scratch(), run.pins()));
  EXPECT_NE(agent.log().find("are not whole"), std::string::npos) << agent.log();
  EXPECT_EQ(metric(agent.port(), "gpuledger_bpf_pinned_libraries_adopted", {}), 0.0);
  EXPECT_EQ(metric(agent.port(), "gpuledger_bpf_pins_adopted", {}), 1.0) << "the maps are whole: kept";
  run.next_launches_counted_once_by(agent);
}

TEST(PinLayout, OneAgentPerPinsAndUninstallRemovesThem) {
  GL_REQUIRE_BPF();
  Scratch scratch("uninstall");
  PinDir pins("uninstall");
  auto agent = std::make_unique<Agent>(agent_args(scratch, pins));
  try {
    Agent second(agent_args(scratch, pins));
    ADD_FAILURE() << "a second agent started on the same pins";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another gpuledger agent is using the BPF pins in " + pins.path()),
              std::string::npos)
        << e.what();
  }
  std::string out;
  EXPECT_EQ(run_cli({"uninstall", "--bpf-pin-dir", pins.path()}, &out), 1) << "refused while an agent holds them";
  EXPECT_NE(out.find("another gpuledger agent"), std::string::npos) << out;
  stop_agent(agent, SIGTERM);
  ASSERT_TRUE(fs::exists(pins.path())) << "a graceful stop with --keep-pins-on-exit keeps the pins";

  EXPECT_EQ(run_cli({"uninstall", "--bpf-pin-dir", pins.path()}, &out), 0) << out;
  EXPECT_NE(out.find("removed"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(pins.path()));
  EXPECT_EQ(run_cli({"uninstall", "--bpf-pin-dir", pins.path()}, &out), 0) << out;
  EXPECT_NE(out.find("nothing pinned"), std::string::npos) << out;
  EXPECT_EQ(run_cli({"uninstall", "--bpf-pin-dir", scratch.path("not-bpffs")}, &out), 0) << out;
  fs::create_directories(scratch.path("not-bpffs/x"));
  EXPECT_EQ(run_cli({"uninstall", "--bpf-pin-dir", scratch.path("not-bpffs")}, &out), 1) << out;
  EXPECT_TRUE(fs::exists(scratch.path("not-bpffs/x"))) << "only bpffs is ever emptied";

  // Pins that cannot be made leave attribution up, unpinned, and say so.
  auto args = agent_args(scratch, pins);
  args.back() = scratch.path("not-bpffs");
  Agent unpinned(args);
  EXPECT_NE(unpinned.log().find("is not on a bpffs: pins must live there"), std::string::npos) << unpinned.log();
  EXPECT_EQ(metric(unpinned.port(), "gpuledger_bpf_pins_adopted", {}), std::nullopt);
  // The simulator's 155 entry points; launches, asynchronous copies and memsets entry only.
  EXPECT_EQ(metric(unpinned.port(), "gpuledger_probes_attached", {}), 243.0);
}

}  // namespace
}  // namespace gpuledger::testing
