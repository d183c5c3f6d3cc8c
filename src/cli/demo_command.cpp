// `gpuledger demo`: the whole attribution plane on a machine without a GPU.
// The tenants are SIMULATED (the bundled CUDA driver simulator and its
// workload generator); the agent, its uprobes, the cgroups and the processes
// are the real ones.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "agent/agent.h"
#include "cli/commands.h"
#include "common/error.h"
#include "common/log.h"
#include "export/http_server.h"
#include "identity/cgroup_fs.h"
#include "simulation/tenant.h"

namespace gpuledger::cli {
namespace {
namespace fs = std::filesystem;

struct TenantSpec {
  const char* label;
  const char* cgroup;  // under the demo's own slice
  const char* script;
  const char* sync_us;
};

// Pod-shaped cgroups (systemd driver, three QoS classes) and a Slurm step.
const TenantSpec kTenants[] = {
    {"training (burstable pod)",
     "/gpuledger-demo/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod1f6a8c2e_5b3d_4e7a_9c1f_2a4b6c8d0e1f.slice/"
     "cri-containerd-7d3f0a9b1c2e4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f.scope",
     "init; alloc 268435456; htod 67108864; launch 4096 1 1 256 1 1 x20; sync; dtoh 4194304; free", "20000"},
    {"inference (guaranteed pod)",
     "/gpuledger-demo/kubepods.slice/kubepods-pod9a8b7c6d_5e4f_4a3b_8c2d_1e0f9a8b7c6d.slice/"
     "cri-containerd-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b.scope",
     "init; alloc 16777216; htod 1048576 async; launch 128 1 1 128 1 1 ptsz x5; sync-ptsz; dtoh 65536; free",
     "2000"},
    {"notebook (besteffort pod)",
     "/gpuledger-demo/kubepods.slice/kubepods-besteffort.slice/"
     "kubepods-besteffort-pod0b1c2d3e_4f5a_4b6c_9d7e_8f9a0b1c2d3e.slice/"
     "cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope",
     "init; alloc-managed 1073741824; launch 64 1 1 64 1 1; free-invalid; sleep-ms 400; free", "0"},
    {"render job (slurm step)", "/gpuledger-demo/system.slice/slurmstepd.scope/job_4242/step_0",
     "init; alloc 536870912; launch 1024 1 1 512 1 1 ex x10; graph x2; sync-ctx; exit 0", "5000"},
};

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
std::string tenant_label(const agent::WorkloadView& w) {
  for (const auto& t : kTenants)
    for (const auto& path : w.cgroup_paths)
      if (path == t.cgroup) return t.label;
  return "";
}

void print_table(const agent::AgentSnapshot& snap, double elapsed) {
  std::printf("\n-- gpuledger demo: SIMULATED tenants, real probes -- t=%.0fs, %zu probes on %zu librar%s\n",
              elapsed, snap.self.probes_attached, snap.self.libraries.size(),
              snap.self.libraries.size() == 1 ? "y" : "ies");
  std::printf("%-27s %-34s %5s %9s %13s %10s %10s %10s %6s %8s %6s\n", "TENANT", "WORKLOAD", "PROCS", "LAUNCHES", "THREADS",
              "ALLOCATED", "LIVE", "H2D", "SYNCS", "SYNC s", "ERRORS");
  for (const auto& w : snap.workloads) {
    const auto& c = w.usage.counters;
    uint64_t errors = 0;
    for (const auto& [call, n] : w.usage.errors_by_call) errors += n;
    std::string id = w.workload.id.size() > 34 ? w.workload.id.substr(0, 31) + "..." : w.workload.id;
    std::printf("%-27s %-34s %5zu %9lu %13lu %10s %10s %10s %6lu %8.2f %6lu\n", tenant_label(w).c_str(), id.c_str(),
                w.processes.size(),
                c.launches, c.launched_threads, human_bytes(c.allocated_bytes).c_str(),
                human_bytes(w.usage.live_bytes()).c_str(), human_bytes(c.memcpy_bytes[GL_DIR_HTOD]).c_str(),
                c.syncs, c.sync_ns / 1e9, errors);
  }
  std::fflush(stdout);
}

}  // namespace

int run_demo(const DemoCommand& cmd) {
  if (::geteuid() != 0) throw Error("the demo loads eBPF programs and creates cgroups: run it as root");
  std::string lib = cmd.cuda_lib.empty() ? beside_self("sim/lib/libcuda.so.1") : cmd.cuda_lib;
  std::string cudasim = cmd.cudasim.empty() ? beside_self("gpuledger-cudasim") : cmd.cudasim;
  auto mounts = identity::discover_cgroup_mounts();
  if (mounts.v2.empty()) throw Error("the demo needs a cgroup2 mount (none in /proc/self/mountinfo)");

  std::printf("gpuledger demo: %zu SIMULATED tenants on the bundled CUDA driver simulator (%s).\n"
              "The probes, cgroups and attribution are real; the GPU is not.\n",
              std::size(kTenants), lib.c_str());
  agent::AgentOptions options;
  options.cuda_libs = {lib};
  options.discover = false;
  agent::Agent agent(options);
  agent.start();
  exporter::HttpServer server(agent);
  auto [host, port] = exporter::parse_listen_address(cmd.listen);
  int bound = server.start(host, port);
  std::printf("Metrics: http://%s:%d/metrics   JSON: http://%s:%d/api/v1/workloads\n", host.c_str(), bound,
              host.c_str(), bound);

  std::vector<std::unique_ptr<simulation::ScopedCgroup>> cgroups;
  for (const auto& t : kTenants) cgroups.push_back(std::make_unique<simulation::ScopedCgroup>(mounts.v2, t.cgroup));

  install_stop_signals();
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
        spawn.pipe_stdout = true;
        simulation::Child child({cudasim, "--quiet", "--sync-us", kTenants[i].sync_us, kTenants[i].script}, spawn);
        child.read_all();
        if (child.wait() != 0) spdlog::warn("tenant {} exited with {}", kTenants[i].label, child.wait());
      }
    });
  }
  while (std::chrono::steady_clock::now() < deadline && !stop_requested()) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    print_table(agent.snapshot(), std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  done = true;
  for (auto& r : runners) r.join();
  std::printf("\nFinal counts (all tenants stopped; live memory back to zero):");
  print_table(agent.snapshot(), std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  server.stop();
  agent.stop();
  return 0;
}

}  // namespace gpuledger::cli
