#include <algorithm>
#include <csignal>
#include <memory>
#include <optional>
#include <cstdio>
#include <thread>

#include "agent/agent.h"
#include "cli/commands.h"
#include "common/log.h"
#include "device/device_plane.h"
#include "device/doctor.h"
#include "export/http_server.h"
#include "common/error.h"
#include "config/agent_config.h"
#include "kubernetes/cluster_config.h"
#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/kubernetes_metrics.h"
#include "kubernetes/pod_resources_client.h"
#include "kubernetes/team_namer.h"

namespace gpuledger::cli {
namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

void install_stop_signals() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}
bool stop_requested() { return g_stop != 0; }

int run_agent(const AgentCommand& cmd) {
  auto [host, port] = exporter::parse_listen_address(cmd.listen);
  agent::AgentOptions options;
  options.cuda_libs = cmd.cuda_libs;
  options.discover = !cmd.no_discovery;
  options.launch_returns = cmd.launch_returns;
  options.max_workloads = cmd.max_workloads;
  options.scan_interval = std::chrono::milliseconds(cmd.scan_interval_ms);

  // Names and teams: the Kubernetes API (when reachable at all: retried in the
  // background, UID-based identity meanwhile) and the configuration's rules.
  const config::AgentConfig agent_config =
      cmd.config.empty() ? config::AgentConfig{} : config::load_agent_config(cmd.config);
  auto pods = std::make_shared<kubernetes::PodDirectory>(agent_config.pod_grace_period);
  std::optional<kubernetes::ClusterConfig> cluster;
  try {
    cluster = kubernetes::discover_cluster_config(cmd.kubeconfig);
  } catch (const Error& e) {
    if (!cmd.kubeconfig.empty()) throw;  // an explicit --kubeconfig that cannot be used is an operator error
    spdlog::error("kubernetes: {}; going on without pod names", e.what());
  }
  std::unique_ptr<kubernetes::KubernetesMetadata> k8s;
  if (cluster) {
    kubernetes::KubernetesOptions k8s_options;
    k8s_options.cluster = *cluster;
    k8s_options.node_name = kubernetes::resolve_node_name(cmd.node_name);
    k8s_options.watch_namespaces = !agent_config.team_rule.namespace_label_key.empty();
    k8s = std::make_unique<kubernetes::KubernetesMetadata>(k8s_options, pods);
  } else {
    spdlog::info("kubernetes: no --kubeconfig and not in a cluster: workloads keep their cgroup identity");
  }
  options.namer =
      std::make_shared<kubernetes::TeamNamer>(cluster ? pods : nullptr, agent_config.team_rule, agent_config.teams);
  std::unique_ptr<kubernetes::PodResourcesMonitor> pod_resources;
  if (!cmd.pod_resources_socket.empty())
    pod_resources = std::make_unique<kubernetes::PodResourcesMonitor>(
        cmd.pod_resources_socket,
        kubernetes::AllocationOptions{agent_config.extra_gpu_resources, agent_config.dra_drivers},
        agent_config.pod_resources_interval);
  kubernetes::KubernetesMetrics k8s_metrics(pods, agent_config.team_rule, k8s.get(), pod_resources.get());

  agent::Agent agent(options);
  agent.start();
  if (k8s) k8s->start();
  if (pod_resources) pod_resources->start();
  exporter::HttpServer server(agent);
  device::DevicePlaneOptions device_options;
  device_options.nvml = !cmd.no_nvml;
  device_options.nvml_library = cmd.nvml_lib;
  device_options.nvml_interval = std::chrono::milliseconds(cmd.nvml_interval_ms);
  device_options.dcgm_exporter_url = cmd.dcgm_exporter;
  device_options.dcgm_interval = std::chrono::milliseconds(cmd.dcgm_interval_ms);
  device_options.scrape.timeout = std::chrono::milliseconds(cmd.dcgm_timeout_ms);
  device_options.dcgm_stale_after = std::max(std::chrono::milliseconds(60000), 3 * device_options.dcgm_interval);
  device_options.nvidia_proc_root = cmd.nvidia_proc_root;
  device::DevicePlane device_plane(device_options);
  device_plane.start();
  server.add_contributor(&device_plane);
  server.add_contributor(&k8s_metrics);
  int bound = server.start(host, port);
  spdlog::info("gpuledger agent serving http://{}:{}/metrics", host, bound);
  install_stop_signals();
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  spdlog::info("stopping");
  server.stop();
  if (k8s) k8s->stop();
  if (pod_resources) pod_resources->stop();
  device_plane.stop();
  agent.stop();
  return 0;
}

int run_doctor(const DoctorCommand& cmd) {
  device::DoctorOptions options;
  options.nvml_library = cmd.nvml_lib;
  options.dcgm_exporter_url = cmd.dcgm_exporter;
  options.pod_resources_socket = cmd.pod_resources_socket;
  options.nvidia_proc_root = cmd.nvidia_proc_root;
  options.btf_path = cmd.btf;
  auto reports = device::run_doctor(options);
  std::fputs(device::format_doctor_table(reports).c_str(), stdout);
  return device::doctor_exit_code(reports);
}

}  // namespace gpuledger::cli
