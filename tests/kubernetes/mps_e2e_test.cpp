// CUDA MPS end to end, as root with the real BPF programs: the simulated MPS
// control daemon and server (sim/mps) run in the device plugin's pod, clients
// attach through it from tenant pods, and a tenant runs its own binary named
// nvidia-cuda-mps-server. The clients are billed by their own calls, the
// server is infrastructure (never a user in the split), the impostor is a
// tenant, NVML lists the server and the clients as under real MPS, and a pod
// holding two MPS replicas is one allocation, not one per slot.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "attribution/attribution_plane.h"
#include "attribution/workloads_json.h"
#include "bpf_requirement.h"
#include "device/nvml_client.h"
#include "export/http_server.h"
#include "exposition_parser.h"
#include "identity/infrastructure.h"
#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/kubernetes_metrics.h"
#include "kubernetes/pod_resources_client.h"
#include "kubernetes/team_namer.h"
#include "node/snapshot_usage.h"
#include "tenant_harness.h"
#include "test_api_server.h"
#include "test_kubelet.h"

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using simulation::Child;
using simulation::ScopedCgroup;
using simulation::SpawnOptions;

const std::string kMpsControl = GPULEDGER_MPS_DIR "/nvidia-cuda-mps-control";
const std::string kMpsServer = GPULEDGER_MPS_DIR "/nvidia-cuda-mps-server";
const std::string kSimGpu = "GPU-67706c73-696d-4000-8000-000000000000";  // the driver simulator's device 0

constexpr char kUidDaemon[] = "f0000000-0000-4000-8000-0000000000f0";
constexpr char kUidA[] = "f1000000-0000-4000-8000-0000000000f1";
constexpr char kUidB[] = "f2000000-0000-4000-8000-0000000000f2";
constexpr char kUidSneaky[] = "f3000000-0000-4000-8000-0000000000f3";
const std::string kHexDaemon(64, '0'), kHexA(64, '1'), kHexB(64, '2'), kHexSneaky(64, '3');

std::string k8s_id(const std::string& uid, const std::string& hex) { return "k8s/" + uid + "/" + hex; }

long read_pid(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  in >> pid;
  return pid;
}

// Stops a control daemon the way an admin does: `echo quit | nvidia-cuda-mps-control`.
void quit_daemon(const std::string& pipe_dir, Child& daemon) {
  Child quit({kMpsControl}, SpawnOptions{{}, {"CUDA_MPS_PIPE_DIRECTORY=" + pipe_dir}, true, false});
  quit.write_line("quit");
  quit.close_stdin();
  quit.wait();
  daemon.wait();
}

TEST(MpsEndToEnd, ClientsAreBilledTheServerIsInfrastructureAndNoSlotIsDuplicated) {
  GL_REQUIRE_BPF();
  char tmpl[] = "/tmp/gpuledger-mps-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string pipe = dir + "/mps", host_pipe = dir + "/host-mps", sneaky_pipe = dir + "/sneaky";
  for (const auto& d : {pipe, host_pipe, sneaky_pipe}) fs::create_directories(d);

  TestApiServer api(TestApiServer::Options{});
  api.start();
  api.upsert_namespace("gpu-operator", {});
  api.upsert_namespace("ml", {});
  api.upsert_node({{"metadata",
                    {{"name", "node-1"},
                     {"uid", "n1"},
                     {"labels", {{"nvidia.com/mps.capable", "true"}, {"nvidia.com/gpu.sharing-strategy", "mps"}}}}}});
  api.upsert_pod(TestApiServer::make_pod(kUidDaemon, "gpu-operator", "nvidia-device-plugin-mps-control-daemon-7xk2p",
                                         "node-1", {}, {{"mps-control-daemon-ctr", "containerd://" + kHexDaemon}}));
  api.upsert_pod(TestApiServer::make_pod(kUidA, "ml", "client-a", "node-1", {}, {{"main", "containerd://" + kHexA}}));
  api.upsert_pod(TestApiServer::make_pod(kUidB, "ml", "client-b", "node-1", {}, {{"main", "containerd://" + kHexB}}));
  api.upsert_pod(
      TestApiServer::make_pod(kUidSneaky, "ml", "sneaky", "node-1", {}, {{"main", "containerd://" + kHexSneaky}}));

  TestKubelet kubelet(dir + "/kubelet.sock");
  v1::ListPodResourcesResponse list;
  TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(list, "ml", "client-a"), "main"),
                           "nvidia.com/gpu", {kSimGpu + "::0", kSimGpu + "::1"});
  TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(list, "ml", "client-b"), "main"),
                           "nvidia.com/gpu", {kSimGpu + "::2"});
  TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(list, "ml", "sneaky"), "main"),
                           "nvidia.com/gpu", {kSimGpu + "::3"});
  kubelet.set_list(list);
  v1::AllocatableResourcesResponse allocatable;
  auto* devs = allocatable.add_devices();
  devs->set_resource_name("nvidia.com/gpu");
  for (int i = 0; i < 4; ++i) devs->add_device_ids(kSimGpu + "::" + std::to_string(i));
  kubelet.set_allocatable(allocatable);

  auto directory = std::make_shared<kubernetes::PodDirectory>(std::chrono::minutes(10));
  kubernetes::KubernetesOptions ko;
  ko.cluster = kubernetes::load_kubeconfig(api.write_kubeconfig(dir));
  ko.node_name = "node-1";
  ko.initial_backoff = std::chrono::milliseconds(20);
  kubernetes::KubernetesMetadata metadata(ko, directory);
  metadata.start();
  kubernetes::PodResourcesMonitor pod_resources(kubelet.socket_path(), {}, std::chrono::seconds(60));
  pod_resources.set_sharing_facts([&] { return metadata.sharing_facts(); });
  ASSERT_TRUE(eventually([&] { return directory->pods() == 4 && metadata.sharing_facts().node_labels.size() == 2; },
                         std::chrono::seconds(10)));

  attribution::AttributionOptions options;
  options.cuda_libs = {kSimLib};
  options.discover = false;
  options.classifier.cgroup_roots = {test_cgroup("")};
  config::TeamRule rule;
  options.namer = std::make_shared<kubernetes::TeamNamer>(directory, rule, std::vector<config::TeamMapping>{});
  options.infrastructure = std::make_shared<identity::InfrastructureJudge>(identity::InfrastructureOptions{});
  attribution::AttributionPlane agent(options);
  agent.start();

  {
    ScopedCgroup daemon_cg(mounts().v2, test_cgroup("/kubepods/besteffort/pod" + std::string(kUidDaemon) + "/" + kHexDaemon));
    ScopedCgroup a_cg(mounts().v2, test_cgroup("/kubepods/besteffort/pod" + std::string(kUidA) + "/" + kHexA));
    ScopedCgroup b_cg(mounts().v2, test_cgroup("/kubepods/besteffort/pod" + std::string(kUidB) + "/" + kHexB));
    ScopedCgroup sneaky_cg(mounts().v2,
                           test_cgroup("/kubepods/besteffort/pod" + std::string(kUidSneaky) + "/" + kHexSneaky));
    ScopedCgroup host_cg(mounts().v2, test_cgroup("/system.slice/nvidia-mps.service"));

    // The device plugin's MPS control daemon starts its server in its own pod;
    // a host's MPS service does the same outside Kubernetes.
    Child daemon({kMpsControl, "-f"}, SpawnOptions{{daemon_cg.dir()}, {"CUDA_MPS_PIPE_DIRECTORY=" + pipe}, false, false});
    Child host_daemon({kMpsControl, "-f"},
                      SpawnOptions{{host_cg.dir()}, {"CUDA_MPS_PIPE_DIRECTORY=" + host_pipe}, false, false});
    // A tenant's binary of the same name, in its own pod.
    Child sneaky({kMpsServer}, SpawnOptions{{sneaky_cg.dir()}, {"CUDA_MPS_PIPE_DIRECTORY=" + sneaky_pipe}, false, true});
    ASSERT_TRUE(eventually([&] {
      return read_pid(pipe + "/server.pid") > 0 && read_pid(host_pipe + "/server.pid") > 0 &&
             read_pid(sneaky_pipe + "/server.pid") > 0;
    }));

    // Clients attach through the daemon's pipe directory and make their own calls.
    auto client_a = start_interactive_tenant({a_cg.dir()}, "init; launch 1 1 1 4 1 1 x5; alloc 4096; print-ready; wait-stdin",
                                             {"CUDA_MPS_PIPE_DIRECTORY=" + pipe});
    await_ready(*client_a);
    ASSERT_EQ(run_tenant({b_cg.dir()}, "init; launch 1 1 1 4 1 1 x3", {"CUDA_MPS_PIPE_DIRECTORY=" + pipe}).exit_code, 0);

    // NVML under MPS: the server (with its own memory) and the live client.
    ::setenv("GPULEDGER_NVML_SIM_CONFIG", (dir + "/nvml.json").c_str(), 1);
    std::ofstream(dir + "/nvml.json") << nlohmann::json{
        {"devices", {{{"uuid", kSimGpu}, {"mps_pipe_directory", pipe}, {"memory", {{"total", 85899345920ull}, {"used", 0}}}}}}};
    auto nvml = device::NvmlClient::open(GPULEDGER_NVML_SIM);
    auto poll = nvml->poll("node-1");
    const auto server_pid = static_cast<uint32_t>(read_pid(pipe + "/server.pid"));
    ASSERT_EQ(poll.processes.size(), 2u);
    for (const auto& p : poll.processes) {
      EXPECT_EQ(p.gpu_uuid, kSimGpu);
      if (p.pid == server_pid) {
        EXPECT_FALSE(p.mps);
        EXPECT_EQ(p.used_bytes, 32ull << 20);
      } else {
        EXPECT_EQ(p.pid, static_cast<uint32_t>(client_a->pid()));
        EXPECT_TRUE(p.mps);
        EXPECT_FALSE(p.used_bytes.has_value());
      }
    }

    // Who is what, from the agent's own snapshot.
    const std::string daemon_id = k8s_id(kUidDaemon, kHexDaemon), sneaky_id = k8s_id(kUidSneaky, kHexSneaky);
    const std::string host_id = "systemd/nvidia-mps.service";
    ASSERT_TRUE(eventually([&] {
      auto snap = agent.snapshot();
      for (const auto& id : {daemon_id, sneaky_id, host_id, k8s_id(kUidA, kHexA), k8s_id(kUidB, kHexB)})
        if (!find_workload(snap, id)) return false;
      auto* d = find_workload(snap, daemon_id);
      return !d->processes.empty() && d->infrastructure && find_workload(snap, host_id)->infrastructure;
    }));
    auto snap = agent.snapshot();
    EXPECT_EQ(find_workload(snap, daemon_id)->names.namespace_name, "gpu-operator");
    EXPECT_EQ(find_workload(snap, daemon_id)->usage.live_bytes(), 32ull << 20);
    EXPECT_FALSE(find_workload(snap, sneaky_id)->infrastructure);
    EXPECT_EQ(find_workload(snap, sneaky_id)->usage.live_bytes(), 32ull << 20);
    EXPECT_FALSE(find_workload(snap, k8s_id(kUidA, kHexA))->infrastructure);
    EXPECT_EQ(find_workload(snap, k8s_id(kUidA, kHexA))->usage.counters.launches, 5u);
    EXPECT_EQ(find_workload(snap, k8s_id(kUidB, kHexB))->usage.counters.launches, 3u);

    // Shown apart in /api/v1/workloads.
    std::map<std::string, std::string> roles;
    const auto listing = attribution::workloads_json(snap);
    for (const auto& w : listing["workloads"])
      roles[w["workload"].get<std::string>()] = w["role"].get<std::string>();
    EXPECT_EQ(roles[daemon_id], "infrastructure");
    EXPECT_EQ(roles[host_id], "infrastructure");
    EXPECT_EQ(roles[sneaky_id], "tenant");
    EXPECT_EQ(roles[k8s_id(kUidA, kHexA)], "tenant");

    // The ledger's users: the clients and the impostor, never the servers.
    std::set<std::string> users;
    for (const auto& u : node::workload_usages(snap)) users.insert(u.account);
    EXPECT_TRUE(users.count(k8s_id(kUidA, kHexA)));
    EXPECT_TRUE(users.count(k8s_id(kUidB, kHexB)));
    EXPECT_TRUE(users.count(sneaky_id));
    EXPECT_FALSE(users.count(daemon_id));
    EXPECT_FALSE(users.count(host_id));

    finish_interactive_tenant(*client_a);
    quit_daemon(pipe, daemon);
    quit_daemon(host_pipe, host_daemon);
    ::kill(sneaky.pid(), SIGTERM);
    sneaky.wait();
  }

  // One allocation per container and device: client-a's two MPS slots are one
  // entry holding half the GPU, and one series.
  pod_resources.poll_now();
  auto st = pod_resources.state();
  ASSERT_EQ(st.allocations.size(), 3u);
  EXPECT_EQ(st.allocations[0].pod, "client-a");
  EXPECT_EQ(st.allocations[0].share, 0.5);
  EXPECT_EQ(st.allocations[0].mode, "mps");
  EXPECT_EQ(st.allocations[1].share, 0.25);
  EXPECT_EQ(st.allocations[1].mode, "mps");
  kubernetes::KubernetesMetrics metrics(directory, rule, &metadata, &pod_resources);
  metrics::ExpositionWriter out;
  metrics.write_metrics(out);
  size_t series = 0;
  for (const auto& s : parse_exposition(out.text()))
    if (s.name == "gpuledger_gpu_allocation_info" && s.labels.count("pod") && s.labels.at("pod") == "client-a") ++series;
  EXPECT_EQ(series, 1u);

  agent.stop();
  metadata.stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::testing
