// A tenant that exec'd with another GPU's UUID in CUDA_VISIBLE_DEVICES (and,
// say, set its own before cuInit) runs on its own GPU: NVML's process lists
// (the NVML simulator) and the device files its processes hold say so. The
// agent books its calls there, says how it knew (gpu_source) and counts the
// disagreement; the other GPU's holder loses nothing. Real BPF, as root.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "attribution/attribution_plane.h"
#include "attribution/metrics_page.h"
#include "bpf_requirement.h"
#include "device/device_plane.h"
#include "device/nvml_client.h"
#include "exposition_parser.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using simulation::ScopedCgroup;

const std::string kUuid0 = "GPU-00000000-1111-2222-3333-444444444444";
const std::string kUuid1 = "GPU-55555555-6666-7777-8888-999999999999";

// The NVML simulator's script: the two GPUs, `on0` listed on GPU 0 and `on1` on GPU 1.
void write_nvml_script(const std::string& path, std::vector<int> on0, std::vector<int> on1) {
  auto procs = [](const std::vector<int>& pids) {
    nlohmann::json out = nlohmann::json::array();
    for (int pid : pids) out.push_back({{"pid", pid}, {"used_bytes", 1 << 20}});
    return out;
  };
  nlohmann::json script = {{"devices",
                            {{{"uuid", kUuid0}, {"minor", 0}, {"pci_bus_id", "00000000:07:00.0"},
                              {"memory", {{"total", 85899345920ull}, {"used", 0}}}, {"compute_processes", procs(on0)}},
                             {{"uuid", kUuid1}, {"minor", 1}, {"pci_bus_id", "00000000:08:00.0"},
                              {"memory", {{"total", 85899345920ull}, {"used", 0}}}, {"compute_processes", procs(on1)}}}}};
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << script.dump();
  fs::rename(tmp, path);
}

// A node of the two GPUs above whose NVML (the simulator, through its client)
// lists what the test writes, and the attribution plane's options for it.
struct TwoGpuNode {
  explicit TwoGpuNode(const char* name) {
    std::string tmpl = std::string("/tmp/gpuledger-") + name + "-XXXXXX";
    dir = ::mkdtemp(tmpl.data());
    script = dir + "/nvml.json";
    write_nvml_script(script, {}, {});
    ::setenv("GPULEDGER_NVML_SIM_CONFIG", script.c_str(), 1);
    nvml = device::NvmlClient::open(GPULEDGER_NVML_SIM);
  }
  ~TwoGpuNode() {
    ::unsetenv("GPULEDGER_NVML_SIM_CONFIG");
    fs::remove_all(dir);
  }
  attribution::AttributionOptions options() {
    attribution::AttributionOptions o;
    o.gpu_inventory = [] { return std::vector<identity::GpuIdentity>{{0, kUuid0, 0}, {1, kUuid1, 1}}; };
    o.gpu_processes = [this] {
      std::lock_guard lock(mu);
      device::DeviceSnapshot s;
      s.processes = nvml->poll("node-1").processes;
      return device::gpu_processes(s);
    };
    o.cuda_libs = {kSimLib};
    o.discover = false;
    o.classifier.cgroup_roots = {test_cgroup("")};
    return o;
  }
  std::string dir, script;
  std::unique_ptr<device::NvmlClient> nvml;
  std::mutex mu;
};

std::vector<attribution::GpuUsage> on(const attribution::AttributionSnapshot& snap, const std::string& id) {
  const auto* w = find_workload(snap, id);
  return w ? w->by_gpu : std::vector<attribution::GpuUsage>{};
}

TEST(ForgedVisibleDevices, TheDeviceSideWinsOverTheEnvironment) {
  GL_REQUIRE_BPF();
  TwoGpuNode node("forged-env");
  const std::string& script = node.script;
  attribution::AttributionPlane agent(node.options());
  agent.start();

  ScopedCgroup cheat_cg(mounts().v2, test_cgroup("/system.slice/forged-env.service"));
  ScopedCgroup holder_cg(mounts().v2, test_cgroup("/system.slice/gpu1-holder.service"));
  ScopedCgroup plain_cg(mounts().v2, test_cgroup("/system.slice/env-only.service"));
  // The cheat runs on GPU 0 (NVML lists it there) with GPU 1's UUID in its
  // environment; GPU 1's holder names its own GPU; a third is listed nowhere.
  auto cheat = start_interactive_tenant({cheat_cg.dir()}, "init; launch 1 1 1 1 1 1 x3; print-ready; wait-stdin",
                                        {"CUDA_VISIBLE_DEVICES=" + kUuid1});
  auto holder = start_interactive_tenant({holder_cg.dir()}, "init; launch 1 1 1 1 1 1 x4; print-ready; wait-stdin",
                                         {"CUDA_VISIBLE_DEVICES=" + kUuid1});
  auto plain = start_interactive_tenant({plain_cg.dir()}, "init; launch 1 1 1 1 1 1 x2; print-ready; wait-stdin",
                                        {"CUDA_VISIBLE_DEVICES=" + kUuid1});
  await_ready(*cheat);
  await_ready(*holder);
  await_ready(*plain);
  write_nvml_script(script, {cheat->pid()}, {holder->pid()});

  ASSERT_TRUE(eventually(
      [&] {
        auto snap = agent.snapshot();
        auto c = on(snap, "systemd/forged-env.service"), h = on(snap, "systemd/gpu1-holder.service"),
             p = on(snap, "systemd/env-only.service");
        return c.size() == 1 && c[0].uuid == kUuid0 && h.size() == 1 && h[0].gpu_source == "device" && p.size() == 1 &&
               !p[0].gpu_source.empty();
      },
      std::chrono::seconds(10)));
  auto snap = agent.snapshot();
  auto c = on(snap, "systemd/forged-env.service"), h = on(snap, "systemd/gpu1-holder.service"),
       p = on(snap, "systemd/env-only.service");
  EXPECT_EQ(c[0].gpu, "0");
  EXPECT_EQ(c[0].gpu_source, "device");
  EXPECT_EQ(c[0].usage.counters.launches, 3u);
  EXPECT_EQ(h[0].uuid, kUuid1);
  EXPECT_EQ(h[0].usage.counters.launches, 4u);
  // Nothing the cheat did is on GPU 1, whose holder keeps its bill alone.
  EXPECT_EQ(p[0].uuid, kUuid1);
  EXPECT_EQ(p[0].gpu_source, "environment");  // no device-side evidence: the hint, said as such
  EXPECT_EQ(snap.self.gpu_identity_disagreements, 1u);

  auto samples = parse_exposition(attribution::render_metrics(snap, 0));
  EXPECT_EQ(sample_value(samples, "gpuledger_cuda_kernel_launches_total",
                         {{"workload", "systemd/forged-env.service"}, {"gpu", "0"}, {"UUID", kUuid0}}),
            3);
  EXPECT_FALSE(sample_value(samples, "gpuledger_cuda_kernel_launches_total",
                            {{"workload", "systemd/forged-env.service"}, {"UUID", kUuid1}}));
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_gpu_info",
                         {{"workload", "systemd/forged-env.service"}, {"UUID", kUuid0}, {"gpu_source", "device"}}),
            1);
  EXPECT_EQ(sample_value(samples, "gpuledger_workload_gpu_info",
                         {{"workload", "systemd/env-only.service"}, {"UUID", kUuid1}, {"gpu_source", "environment"}}),
            1);

  // Still right once NVML no longer lists it: the device side's answer stays.
  write_nvml_script(script, {}, {});
  finish_interactive_tenant(*cheat);
  finish_interactive_tenant(*holder);
  finish_interactive_tenant(*plain);
  auto after = on(agent.snapshot(), "systemd/forged-env.service");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].uuid, kUuid0);
  agent.stop();
}

// Calls made where the probes saw no context tied to a device (a CUDA 13
// runtime, docs/gpu-validation.md; here a process that took up CUDA before
// the agent started): booked on the one GPU its processes are on by NVML's
// lists, said as "device"; a workload on two GPUs stays unknown.
TEST(ForgedVisibleDevices, CallsOnAnUnknownContextGoToTheOneGpuTheWorkloadHolds) {
  GL_REQUIRE_BPF();
  TwoGpuNode node("unknown-ctx");
  ScopedCgroup one_cg(mounts().v2, test_cgroup("/system.slice/early-one.service"));
  ScopedCgroup two_cg(mounts().v2, test_cgroup("/system.slice/early-two.service"));
  // Both take up CUDA (their contexts current) before any agent runs.
  auto one = start_interactive_tenant({one_cg.dir()}, "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x3; sync; "
                                                      "print-ready; wait-stdin");
  auto two = start_interactive_tenant({two_cg.dir()}, "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x2; sync; "
                                                      "print-ready; wait-stdin");
  await_ready(*one);
  await_ready(*two);
  write_nvml_script(node.script, {one->pid(), two->pid()}, {two->pid()});
  attribution::AttributionPlane agent(node.options());
  agent.start();
  one->write_line("go");
  two->write_line("go");
  await_ready(*one);
  await_ready(*two);

  ASSERT_TRUE(eventually(
      [&] {
        auto snap = agent.snapshot();
        auto a = on(snap, "systemd/early-one.service"), b = on(snap, "systemd/early-two.service");
        return a.size() == 1 && a[0].usage.counters.launches == 3 && !a[0].uuid.empty() && b.size() == 1 &&
               b[0].usage.counters.launches == 2;
      },
      std::chrono::seconds(10)))
      << [&] {
           std::string out;
           for (const char* id : {"systemd/early-one.service", "systemd/early-two.service"})
             for (const auto& g : on(agent.snapshot(), id))
               out += std::string(id) + " gpu=" + g.gpu + " uuid=" + g.uuid + " source=" + g.gpu_source +
                      " launches=" + std::to_string(g.usage.counters.launches) + "\n";
           return out;
         }();
  auto snap = agent.snapshot();
  auto a = on(snap, "systemd/early-one.service"), b = on(snap, "systemd/early-two.service");
  EXPECT_EQ(a[0].gpu, "0");
  EXPECT_EQ(a[0].uuid, kUuid0);
  EXPECT_EQ(a[0].gpu_source, "device");
  EXPECT_EQ(b[0].uuid, "") << "on two GPUs: which one its calls went to is unknown";
  auto samples = parse_exposition(attribution::render_metrics(snap, 0));
  EXPECT_EQ(sample_value(samples, "gpuledger_cuda_kernel_launches_total",
                         {{"workload", "systemd/early-one.service"}, {"gpu", "0"}, {"UUID", kUuid0}}),
            3);
  finish_interactive_tenant(*one);
  finish_interactive_tenant(*two);
  agent.stop();
}

}  // namespace
}  // namespace gpuledger::testing
