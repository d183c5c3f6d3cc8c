// `gpuledger demo`: the whole pipeline on a machine without a GPU. What is
// SIMULATED: the CUDA driver (sim/libcuda), NVML (sim/nvml: three scripted
// GPUs), dcgm-exporter (a loopback page with a real one's noise, simulation/dcgm_stand_in.h), the workloads (the gpuledger-cudasim generator) and the Kubernetes
// names and GPU allocation (fixed here, as a kubelet would report them). What
// is real: the agent, its eBPF probes, the cgroups, the processes, the device
// plane reading NVML, and the ledger and its report. Energy: the simulated
// GPUs report 300 W and no energy counter, so the bill's energy is power
// integrated over time (source power_integrated), split like the cost.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "attribution/attribution_plane.h"
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/demo_hint.h"
#include "cli/demo_shared_bill.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stop_signals.h"
#include "device/device_plane.h"
#include "export/http_server.h"
#include "identity/cgroup_fs.h"
#include "kubernetes/device_ids.h"
#include "ledger/accountant.h"
#include "ledger/bill_inputs.h"
#include "ledger/store.h"
#include "node/observation_inputs.h"
#include "node/served_content.h"
#include "report/bill.h"
#include "report/report.h"
#include "simulation/dcgm_stand_in.h"
#include "simulation/tenant.h"

namespace gpuledger::cli {
namespace {
namespace fs = std::filesystem;

// Three simulated GPUs, as NVML (the simulator) reports them.
constexpr const char* kGpuShared = "GPU-5d2c8a41-0b7e-4c3f-9a6d-1e2f3a4b5c6d";
constexpr const char* kGpuNotebook = "GPU-7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
constexpr const char* kGpuUnheld = "GPU-c0ffee00-1234-4567-89ab-cdef01234567";

std::string nvml_script() {
  auto device = [](const char* uuid, int minor, int util, long long used) {
    return std::string("{\"uuid\": \"") + uuid + "\", \"name\": \"gpuledger simulated H100\", " +
           "\"pci_bus_id\": \"00000000:0" + std::to_string(minor + 1) + ":00.0\", \"minor\": " +
           std::to_string(minor) + ", \"mig_mode\": 0, \"utilization\": {\"gpu\": " + std::to_string(util) +
           ", \"memory\": 20}, \"memory\": {\"total\": 85899345920, \"used\": " + std::to_string(used) +
           "}, \"power_mw\": 300000}";
  };
  return "{\"driver_version\": \"simulated\", \"devices\": [" + device(kGpuShared, 0, 72, 21474836480) + ", " +
         device(kGpuNotebook, 1, 3, 1073741824) + ", " + device(kGpuUnheld, 2, 35, 8589934592) + "]}";
}

// What a dcgm-exporter on this node would print for the three GPUs, with a
// real one's noise (simulation/dcgm_stand_in.h): the profiling counters only
// DCGM has (SM active and occupancy, tensor and DRAM activity), utilisation,
// power and energy. The shared GPU is busy, the notebook's nearly idle.
std::string dcgm_exposition() {
  static std::mutex mu;
  static simulation::DcgmStandIn stand_in({
      {kGpuShared, 0, "gpuledger simulated H100", 0.72, 0.61, 0.38, 0.27, 0.33},
      {kGpuNotebook, 1, "gpuledger simulated H100", 0.03, 0.02, 0.01, 0.0, 0.01},
      {kGpuUnheld, 2, "gpuledger simulated H100", 0.35, 0.29, 0.18, 0.05, 0.12},
  });
  std::lock_guard lock(mu);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return stand_in.page(now);
}

struct TenantSpec {
  const char* label;
  const char* cgroup;  // under the demo's own slice
  const char* script;
  const char* sync_us;
  const char* gpu;     // CUDA_VISIBLE_DEVICES
  // Kubernetes names and the GPU the pod holds (as the kubelet would report);
  // empty for the Slurm job, which holds nothing.
  const char* pod_uid;
  identity::WorkloadNames names;
  const char* device_id;
};

const TenantSpec kTenants[] = {
    {"training (burstable pod)",
     "/gpuledger-demo/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod1f6a8c2e_5b3d_4e7a_9c1f_2a4b6c8d0e1f.slice/"
     "cri-containerd-7d3f0a9b1c2e4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f.scope",
     "init; alloc 268435456; htod 67108864; launch 4096 1 1 256 1 1 x20; sync; dtoh 4194304; free", "20000",
     kGpuShared, "1f6a8c2e-5b3d-4e7a-9c1f-2a4b6c8d0e1f", {"ml-research", "llm-finetune-0", "trainer", "ml-research"},
     "GPU-5d2c8a41-0b7e-4c3f-9a6d-1e2f3a4b5c6d::0"},
    {"inference (guaranteed pod)",
     "/gpuledger-demo/kubepods.slice/kubepods-pod9a8b7c6d_5e4f_4a3b_8c2d_1e0f9a8b7c6d.slice/"
     "cri-containerd-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b.scope",
     "init; alloc 16777216; htod 1048576 async; launch 128 1 1 128 1 1 ptsz x5; sync-ptsz; dtoh 65536; free",
     "2000", kGpuShared, "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", {"serving", "chat-inference-7d9f", "server", "serving"},
     "GPU-5d2c8a41-0b7e-4c3f-9a6d-1e2f3a4b5c6d::1"},
    {"notebook (besteffort pod)",
     "/gpuledger-demo/kubepods.slice/kubepods-besteffort.slice/"
     "kubepods-besteffort-pod0b1c2d3e_4f5a_4b6c_9d7e_8f9a0b1c2d3e.slice/"
     "cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope",
     "init; alloc-managed 1073741824; launch 64 1 1 64 1 1; sync; free-invalid; sleep-ms 400; free", "0",
     kGpuNotebook, "0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e", {"analytics", "jupyter-alice", "notebook", "analytics"},
     "GPU-7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"},
    {"render job (slurm step)", "/gpuledger-demo/system.slice/slurmstepd.scope/job_4242/step_0",
     "init; alloc 536870912; launch 1024 1 1 512 1 1 ex x10; graph x2; sync-ctx; exit 0", "5000", kGpuUnheld, "",
     {"", "", "", "vfx"}, ""},
};

// The names a Kubernetes API would give the demo's pods; the Slurm job's team
// as a configured mapping would.
class DemoNamer : public identity::WorkloadNamer {
 public:
  identity::WorkloadNames names_for(const identity::Workload& w) const override {
    for (const auto& t : kTenants) {
      if (!w.pod_uid.empty() && w.pod_uid == t.pod_uid) return t.names;
      if (w.kind == identity::WorkloadKind::kSlurm && std::string(t.pod_uid).empty()) return t.names;
    }
    return {};
  }
};

std::vector<kubernetes::GpuAllocation> demo_allocations() {
  std::vector<kubernetes::GpuAllocation> out;
  for (const auto& t : kTenants) {
    if (std::string(t.device_id).empty()) continue;
    auto device = kubernetes::parse_device_id("nvidia.com/gpu", t.device_id);
    if (device)
      out.push_back({t.names.namespace_name, t.names.pod, t.names.container, "nvidia.com/gpu", t.device_id, *device, 1.0,
                     kubernetes::sharing_mode(*device)});
  }
  return out;
}

std::string beside_self(const std::string& name) {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / name).string();
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

// The demo's label for a workload, from the cgroup its tenant runs in.
std::string tenant_label(const attribution::WorkloadView& w) {
  for (const auto& t : kTenants)
    for (const auto& path : w.cgroup_paths)
      if (path == t.cgroup) return t.label;
  return "";
}

void print_table(const attribution::AttributionSnapshot& snap, double elapsed) {
  std::printf("\n-- gpuledger demo: SIMULATED tenants and GPUs, real probes -- t=%.0fs, %zu probes on %zu librar%s\n",
              elapsed, snap.self.probes_attached, snap.self.libraries.size(),
              snap.self.libraries.size() == 1 ? "y" : "ies");
  std::printf("%-27s %-22s %-4s %5s %9s %13s %10s %10s %10s %6s %8s %6s\n", "TENANT", "NAMESPACE/POD", "GPU",
              "PROCS", "LAUNCHES", "THREADS", "ALLOCATED", "LIVE", "H2D", "SYNCS", "BUSY s", "ERRORS");
  for (const auto& w : snap.workloads) {
    for (const auto& g : w.by_gpu) {
      const auto& c = g.usage.counters;
      uint64_t errors = 0;
      for (const auto& [call, n] : g.usage.errors_by_call) errors += n;
      std::string pod = w.names.pod.empty() ? w.workload.id : w.names.namespace_name + "/" + w.names.pod;
      if (pod.size() > 22) pod = pod.substr(0, 19) + "...";
      std::printf("%-27s %-22s %-4s %5zu %9lu %13lu %10s %10s %10s %6lu %8.2f %6lu\n", tenant_label(w).c_str(),
                  pod.c_str(), g.gpu.empty() ? "?" : g.gpu.c_str(), w.processes.size(), c.launches,
                  c.launched_threads, human_bytes(c.allocated_bytes).c_str(), human_bytes(g.usage.live_bytes()).c_str(),
                  human_bytes(c.memcpy_bytes[GL_DIR_HTOD]).c_str(), c.syncs, c.busy_ns / 1e9, errors);
    }
  }
  std::fflush(stdout);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_demo(const DemoCommand& cmd) {
  if (::geteuid() != 0) throw Error("the demo loads eBPF programs and creates cgroups: run it as root");
  std::string lib = cmd.cuda_lib.empty() ? beside_self("sim/lib/libcuda.so.1") : cmd.cuda_lib;
  std::string cudasim = cmd.cudasim.empty() ? beside_self("gpuledger-cudasim") : cmd.cudasim;
  auto mounts = identity::discover_cgroup_mounts();
  if (mounts.v2.empty()) throw Error("the demo needs a cgroup2 mount (none in /proc/self/mountinfo)");
  fs::path workdir = fs::temp_directory_path() / ("gpuledger-demo-" + std::to_string(::getpid()));
  fs::create_directories(workdir);
  std::ofstream(workdir / "nvml-sim.json") << nvml_script();
  ::setenv("GPULEDGER_NVML_SIM_CONFIG", (workdir / "nvml-sim.json").c_str(), 1);

  std::printf("gpuledger demo: %zu SIMULATED tenants on 3 SIMULATED GPUs (the project's CUDA driver and NVML\n"
              "simulators, and a stand-in dcgm-exporter). The eBPF probes, cgroups, processes, device plane and\n"
              "ledger are real.\n",
              std::size(kTenants));

  // A stand-in dcgm-exporter on loopback, scraped like the real one.
  httplib::Server dcgm;
  dcgm.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(dcgm_exposition(), "text/plain; version=0.0.4");
  });
  int dcgm_port = dcgm.bind_to_any_port("127.0.0.1");
  std::thread dcgm_thread([&dcgm] { dcgm.listen_after_bind(); });

  device::DevicePlaneOptions device_options;
  device_options.dcgm_exporter_url = "http://127.0.0.1:" + std::to_string(dcgm_port) + "/metrics";
  device_options.dcgm_interval = std::chrono::milliseconds(1000);
  device_options.nvml_library = beside_self("sim/nvml/libnvidia-ml.so.1");
  device_options.nvml_interval = std::chrono::milliseconds(1000);
  device_options.nvidia_proc_root = (workdir / "no-nvidia-driver").string();
  device::DevicePlane devices(device_options);
  devices.start();

  attribution::AttributionOptions options;
  options.cuda_libs = {lib};
  options.discover = false;
  options.classifier.cgroup_roots = {"/gpuledger-demo"};  // the demo's tenants live below it
  options.namer = std::make_shared<DemoNamer>();
  options.gpu_inventory = [&devices] { return device::gpu_identities(devices.snapshot()); };
  attribution::AttributionPlane agent(options);
  agent.start();

  // Prices for the simulated H100s; short windows so a short demo closes some.
  ledger::PriceBook prices;
  prices.currency = "USD";
  prices.default_micros_per_hour = 4'000'000;
  prices.window_seconds = 5;
  prices.carbon_g_per_kwh = 350;  // a grid's intensity: the bill shows each tenant's energy and carbon
  ledger::Store store((workdir / "ledger.db").string());
  ledger::Accountant accountant(store, prices);
  ledger::record_bill_inputs(store, "demo-node", "demo", prices, static_cast<int64_t>(unix_now()));
  const auto allocations = demo_allocations();
  auto observe = [&](double at) {
    accountant.observe(node::make_observation(at, agent.snapshot(), devices.snapshot(), allocations, true, prices));
  };

  exporter::HttpServer server(node::served_content(agent));
  server.add_contributor(&devices);
  server.add_contributor(&accountant);
  auto [host, port] = exporter::parse_listen_address(cmd.listen);
  int bound = server.start(host, port);
  std::printf("Metrics: http://%s:%d/metrics   JSON: http://%s:%d/api/v1/workloads\n", host.c_str(), bound,
              host.c_str(), bound);

  std::vector<std::unique_ptr<simulation::ScopedCgroup>> cgroups;
  for (const auto& t : kTenants) cgroups.push_back(std::make_unique<simulation::ScopedCgroup>(mounts.v2, t.cgroup));

  install_stop_signals();
  const double started_at = unix_now();
  auto started = std::chrono::steady_clock::now();
  auto deadline = started + std::chrono::seconds(cmd.seconds);
  std::atomic<bool> done{false};
  std::vector<std::thread> runners;
  for (size_t i = 0; i < std::size(kTenants); ++i) {
    runners.emplace_back([&, i] {
      // Each round is a new short-lived process, as batch and serving pods do.
      while (!done) {
        simulation::SpawnOptions spawn;
        spawn.cgroup_dirs = {cgroups[i]->dir()};
        spawn.env = {std::string("CUDA_VISIBLE_DEVICES=") + kTenants[i].gpu};
        spawn.pipe_stdout = true;
        simulation::Child child({cudasim, "--quiet", "--sync-us", kTenants[i].sync_us, kTenants[i].script}, spawn);
        child.read_all();
        if (int rc = child.wait(); rc != 0) spdlog::warn("tenant {} exited with {}", kTenants[i].label, rc);
      }
    });
  }
  int tick = 0;
  while (std::chrono::steady_clock::now() < deadline && !stop_requested()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    observe(unix_now());
    if (++tick % 3 == 0)
      print_table(agent.snapshot(), std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  done = true;
  for (auto& r : runners) r.join();
  std::printf("\nFinal counts (all tenants stopped; live memory back to zero):");
  print_table(agent.snapshot(), std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());

  // Close the window in progress, then bill every window the demo touched.
  const double ended_at = unix_now();
  observe(ended_at + prices.window_seconds);
  const int64_t from = static_cast<int64_t>(started_at) / prices.window_seconds * prices.window_seconds;
  const int64_t to = static_cast<int64_t>(ended_at + prices.window_seconds);
  auto windows = store.windows(from, to);
  std::printf("\nChargeback of the simulated tenants (%zu windows of %d s at %s %.2f per GPU-hour): one GPU shared\n"
              "by two pods, one held by an idle notebook, one held by nobody but used by a Slurm job.\n\n",
              windows.size() / 3, prices.window_seconds, prices.currency.c_str(),
              prices.default_micros_per_hour / 1e6);
  report::BillRequest bill;
  bill.from = from;
  bill.to = to;
  bill.generated_at = to;  // the demo closed its last window itself: the range is over
  std::fputs(report::render_bill(store, bill).c_str(), stdout);
  // The shared-GPU bill's window: the last whole minute the demo ran.
  std::fputs(shared_gpu_bill(prices.default_micros_per_hour, prices.currency, static_cast<int64_t>(ended_at) / 60 * 60 - 60)
                 .c_str(),
             stdout);
  std::fputs(demo_report_hint(beside_self("gpuledger"), (workdir / "ledger.db").string(), from, to).c_str(), stdout);
  server.stop();
  agent.stop();
  devices.stop();
  dcgm.stop();
  dcgm_thread.join();
  return 0;
}

Subcommand add_demo_command(CLI::App& app) {
  auto o = std::make_shared<DemoCommand>();
  CLI::App* cmd = app.add_subcommand("demo", "Run the agent on a simulated node (no GPU needed)");
  cmd->footer(
      "Runs the agent against the bundled CUDA driver and NVML simulators, with simulated tenants in pod-shaped "
      "cgroups: real probes, real cgroups, real processes.");
  cmd->add_option("--listen", o->listen, "Where the demo's agent serves /metrics")->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "How long the tenants run")->capture_default_str();
  cmd->add_option("--cuda-lib", o->cuda_lib, "The simulator library (default: next to gpuledger)");
  cmd->add_option("--cudasim", o->cudasim, "The workload generator (default: next to gpuledger)");

  return {cmd, [o] { return run_demo(*o); }};
}

}  // namespace gpuledger::cli
