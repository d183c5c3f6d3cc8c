// Issue 28: `--probe-set auto` on the agent binary, real BPF, the simulated
// driver and NVML. The node starts full, turns billing once NVML shows it
// splits the GPU itself, and switches live - to full when NVML loses its
// per-process samples or an MPS control daemon starts, back to billing when
// they return - attaching and detaching the hot-path probes without losing a
// count already made: an allocation seen under billing is freed under full,
// launches made under full are counted exactly, and none under billing.
#include <signal.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "bpf_requirement.h"
#include "exposition_parser.h"
#include "identity/infrastructure.h"
#include "reliability_support.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {
namespace {

const std::string kMpsControl = GPULEDGER_MPS_DIR "/nvidia-cuda-mps-control";

// The simulated node's GPU, with NVML's per-process samples supported or not.
void write_node(const Scratch& s, bool samples) {
  std::ofstream(s.path("nvml.json.new"))
      << R"({"driver_version": "550.90.07", "devices": [{"uuid": ")" << kSimulatedGpu
      << R"(", "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:07:00.0", "minor": 0, "mig_mode": 0,
         "utilization": {"gpu": 50, "memory": 10}, "memory": {"total": 85899345920, "used": 0},
         "compute_processes": [], "process_utilization": )"
      << (samples ? "[]" : "\"not_supported\"") << "}]}";
  fs::rename(s.path("nvml.json.new"), s.path("nvml.json"));  // whole, for the simulator's re-read
  ::setenv("GPULEDGER_NVML_SIM_CONFIG", s.path("nvml.json").c_str(), 1);
}

std::vector<Sample> page(int port) { return parse_exposition(get_body(port, "/metrics")); }
double value(int port, const std::string& name, const std::map<std::string, std::string>& match) {
  return sample_value(page(port), name, match).value_or(-1);
}
bool in_set(int port, const std::string& set) { return value(port, "gpuledger_probe_set", {{"set", set}}) == 1; }
double changes(int port, const std::string& from, const std::string& to, const std::string& reason) {
  return value(port, "gpuledger_probe_set_changes_total", {{"from", from}, {"to", to}, {"reason", reason}});
}
nlohmann::json workload(int port, const std::string& id) {
  const auto api = nlohmann::json::parse(get_body(port, "/api/v1/workloads"));  // kept: the loop reads into it
  for (const auto& w : api["workloads"])
    if (w["workload"] == id) return w;
  return nullptr;
}

TEST(ProbeSetAuto, SwitchesLiveAndLosesNoCountMade) {
  GL_REQUIRE_BPF();
  // The agent walks the host's processes: a node running MPS is full by design.
  ASSERT_FALSE(identity::mps_control_daemon_running()) << "an MPS control daemon runs on this machine";
  Scratch scratch("probeset-auto");
  write_node(scratch, true);
  std::ofstream(scratch.path("prices.yaml")) << "per_model:\n  H100: 3.60\nwindow_seconds: 10\n";
  Agent agent({"--no-discovery", "--cuda-lib", sim_library(), "--no-nvml=false", "--nvml-lib", nvml_sim_library(),
               "--nvml-interval-ms", "100", "--ledger-interval-ms", "200", "--store", scratch.path("ledger.db"),
               "--prices", scratch.path("prices.yaml"), "--probe-set", "auto"});
  const int port = agent.port();
  // Full until judged, billing after three qualifying observations.
  ASSERT_TRUE(eventually([&] { return in_set(port, "billing"); }, std::chrono::milliseconds(10000))) << agent.log();
  EXPECT_EQ(changes(port, "full", "billing", "device_splits"), 1);
  EXPECT_EQ(value(port, "gpuledger_probe_set", {{"set", "full"}}), 0);
  std::string health = get_body(port, "/healthz");
  EXPECT_NE(health.find("\n- probe set billing (auto: NVML splits every GPU's time itself"), std::string::npos)
      << health;

  const std::string unit = "probeset-auto.service", id = "systemd/" + unit;
  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/" + unit));
  simulation::Child tenant({cudasim_binary(), "init; alloc 4m; launch 1 1 1 1 1 1 x5; htod 4096 x2; sync x3; "
                                              "print-ready; wait-stdin; launch 1 1 1 1 1 1 x7; htod 1000; sync; "
                                              "print-ready; wait-stdin; free-all; print-ready; wait-stdin"},
                           {{cg.dir()}, {}, true, true});
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] {
    auto w = workload(port, id);
    return !w.is_null() && w["counters"]["memory_live_bytes"] == 4 << 20;
  }, std::chrono::milliseconds(5000))) << get_body(port, "/api/v1/workloads");
  // Under billing the hot path is not probed: absent, not 0, and said so.
  auto w = workload(port, id);
  EXPECT_FALSE(w["counters"].contains("kernel_launches")) << w.dump();
  const auto api = nlohmann::json::parse(get_body(port, "/api/v1/workloads"));
  EXPECT_EQ(api["probe_set"]["set"], "billing");
  EXPECT_EQ(api["probe_set"]["not_probed_means"], "not probed (probe set billing)");
  EXPECT_FALSE(sample_value(page(port), "gpuledger_cuda_kernel_launches_total", {{"workload", id}}).has_value());

  // NVML loses its per-process samples: full at the next observation.
  write_node(scratch, false);
  ASSERT_TRUE(eventually([&] { return in_set(port, "full"); }, std::chrono::milliseconds(5000))) << agent.log();
  EXPECT_EQ(changes(port, "billing", "full", "no_process_samples"), 1);
  health = get_body(port, "/healthz");
  EXPECT_NE(health.find("\n- probe set full (auto: NVML gives no per-process samples for GPU 0 (" + kSimulatedGpu),
            std::string::npos)
      << health;
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  tenant.write_line("go");  // frees under full what was allocated under billing
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] {
    auto now = workload(port, id);
    return !now.is_null() && now["counters"].value("kernel_launches", 0) == 7 &&
           now["counters"]["memory_live_bytes"] == 0;
  }, std::chrono::milliseconds(5000))) << workload(port, id).dump();
  w = workload(port, id);
  EXPECT_EQ(w["counters"]["memory_allocated_bytes"], 4 << 20);
  EXPECT_EQ(w["counters"]["memory_freed_bytes"], 4 << 20) << "the allocation made under billing is freed, not leaked";
  EXPECT_EQ(w["counters"]["memory_untracked_frees"], 0);
  EXPECT_EQ(w["counters"]["memcpy_calls"]["htod"], 1) << "only the copy made under full";
  EXPECT_EQ(w["counters"]["syncs"], 1);
  EXPECT_EQ(value(port, "gpuledger_cuda_kernel_launches_total", {{"workload", id}, {"UUID", kSimulatedGpu}}), 7);

  // The samples return: billing again once settled; then an MPS control
  // daemon starts (no client yet): full at once, named.
  write_node(scratch, true);
  ASSERT_TRUE(eventually([&] { return in_set(port, "billing"); }, std::chrono::milliseconds(10000))) << agent.log();
  EXPECT_EQ(changes(port, "full", "billing", "device_splits"), 2);
  const std::string pipe = scratch.path("mps");
  fs::create_directories(pipe);
  simulation::Child daemon({kMpsControl, "-f"}, {{}, {"CUDA_MPS_PIPE_DIRECTORY=" + pipe}, false, false});
  ASSERT_TRUE(eventually([&] { return in_set(port, "full"); }, std::chrono::milliseconds(5000))) << agent.log();
  EXPECT_EQ(changes(port, "billing", "full", "mps"), 1);
  simulation::Child quit({kMpsControl}, {{}, {"CUDA_MPS_PIPE_DIRECTORY=" + pipe}, true, false});  // as an admin stops it
  quit.write_line("quit");
  quit.close_stdin();
  quit.wait();
  daemon.wait();
  tenant.write_line("go");
  EXPECT_EQ(tenant.wait(), 0);
  // The log says each switch and why.
  const std::string log = agent.log();
  EXPECT_NE(log.find("probe set full -> billing: auto: NVML splits every GPU's time itself"), std::string::npos) << log;
  EXPECT_NE(log.find("probe set billing -> full: auto: an MPS control daemon runs on the node"), std::string::npos)
      << log;
}

// The GPU of the first real-GPU run (docs/gpu-validation.md): NVML keeps one
// sample per period for the whole GPU, given to one process. Two workloads
// time-slicing it keep the node full (only the probes can weigh them); one
// alone lets it turn billing; the second returning turns it full again.
void write_shared_node(const Scratch& s, const std::vector<pid_t>& pids) {
  std::string compute, samples;
  for (pid_t pid : pids) {
    compute += std::string(compute.empty() ? "" : ", ") + R"({"pid": )" + std::to_string(pid) + R"(, "used_bytes": 4194304})";
    samples += std::string(samples.empty() ? "" : ", ") + R"({"pid": )" + std::to_string(pid) + R"(, "sm": 30})";
  }
  std::ofstream(s.path("nvml.json.new"))
      << R"({"driver_version": "580.159.04", "devices": [{"uuid": ")" << kSimulatedGpu
      << R"(", "name": "NVIDIA H200", "pci_bus_id": "00000000:07:00.0", "minor": 0, "mig_mode": 0,
         "utilization": {"gpu": 60, "memory": 10}, "memory": {"total": 150754820096, "used": 0},
         "process_samples": "one_per_period", "compute_processes": [)"
      << compute << R"(], "process_utilization": [)" << samples << "]}]}";
  fs::rename(s.path("nvml.json.new"), s.path("nvml.json"));
  ::setenv("GPULEDGER_NVML_SIM_CONFIG", s.path("nvml.json").c_str(), 1);
}

TEST(ProbeSetAuto, WorkloadsTimeSlicingAGpuSampledOneProcessPerPeriodKeepTheProbes) {
  GL_REQUIRE_BPF();
  ASSERT_FALSE(identity::mps_control_daemon_running()) << "an MPS control daemon runs on this machine";
  Scratch scratch("probeset-shared");
  write_shared_node(scratch, {});
  std::vector<std::unique_ptr<simulation::ScopedCgroup>> cgroups;
  std::vector<std::unique_ptr<simulation::Child>> tenants;
  for (const char* unit : {"shared-a.service", "shared-b.service"}) {
    cgroups.push_back(std::make_unique<simulation::ScopedCgroup>(cgroup_v2(), test_cgroup(std::string("/system.slice/") + unit)));
    tenants.push_back(std::make_unique<simulation::Child>(
        std::vector<std::string>{cudasim_binary(), "init; alloc 4m; print-ready; wait-stdin"},
        simulation::SpawnOptions{{cgroups.back()->dir()}, {}, true, true}));
    ASSERT_EQ(tenants.back()->read_line().rfind("READY", 0), 0u);
  }
  write_shared_node(scratch, {tenants[0]->pid(), tenants[1]->pid()});
  Agent agent({"--no-discovery", "--cuda-lib", sim_library(), "--no-nvml=false", "--nvml-lib", nvml_sim_library(),
               "--nvml-interval-ms", "100", "--ledger-interval-ms", "200", "--probe-set", "auto"});
  const int port = agent.port();
  // The two workloads' processes are known to the probes by their cgroups
  // once the agent reads its maps; until then they count as a holder each.
  const std::string why = "GPU 0 (" + kSimulatedGpu + ") runs processes of 2 workloads, and its NVML samples one "
                          "process per period: only the launch probes split its time";
  ASSERT_TRUE(eventually([&] { return get_body(port, "/healthz").find(why) != std::string::npos; },
                         std::chrono::milliseconds(10000)))
      << get_body(port, "/healthz") << agent.log();
  EXPECT_TRUE(in_set(port, "full"));
  EXPECT_EQ(value(port, "gpuledger_probe_set", {{"set", "billing"}}), 0);
  // b leaves the GPU: one workload, nothing to split: billing once settled.
  write_shared_node(scratch, {tenants[0]->pid()});
  ASSERT_TRUE(eventually([&] { return in_set(port, "billing"); }, std::chrono::milliseconds(10000))) << agent.log();
  EXPECT_EQ(changes(port, "full", "billing", "device_splits"), 1);
  // b back beside a: full at the next observation, named.
  write_shared_node(scratch, {tenants[0]->pid(), tenants[1]->pid()});
  ASSERT_TRUE(eventually([&] { return in_set(port, "full"); }, std::chrono::milliseconds(5000))) << agent.log();
  EXPECT_EQ(changes(port, "billing", "full", "shared_gpu"), 1);
  EXPECT_NE(agent.log().find("probe set billing -> full: auto: " + why), std::string::npos) << agent.log();
  for (auto& t : tenants) {
    t->write_line("go");
    EXPECT_EQ(t->wait(), 0);
  }
}

// `doctor` says what auto would choose on this node now, and why.
TEST(ProbeSetAuto, DoctorSaysWhatAutoWouldChoose) {
  Scratch scratch("probeset-doctor");
  std::string out;
  write_node(scratch, true);
  run_cli({"doctor", "--nvml-lib", nvml_sim_library()}, &out);
  const std::regex billing_row("\nprobe-set +OK +auto would choose billing: NVML splits every GPU's time itself");
  EXPECT_TRUE(std::regex_search(out, billing_row)) << out;
  write_node(scratch, false);
  run_cli({"doctor", "--nvml-lib", nvml_sim_library()}, &out);
  EXPECT_NE(out.find("auto would choose full: NVML gives no per-process samples for GPU 0 (" + kSimulatedGpu +
                     ") (Not Supported (3))"),
            std::string::npos) << out;
  run_cli({"doctor", "--nvml-lib", scratch.path("no-such-libnvidia-ml.so.1")}, &out);
  EXPECT_NE(out.find("auto would choose full: NVML is not up"), std::string::npos) << out;
}

}  // namespace
}  // namespace gpuledger::testing
