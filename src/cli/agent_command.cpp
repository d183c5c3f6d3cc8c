#include <algorithm>
#include <csignal>
#include <cstdio>
#include <thread>

#include "agent/agent.h"
#include "cli/commands.h"
#include "common/log.h"
#include "device/device_plane.h"
#include "device/doctor.h"
#include "export/http_server.h"

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

  agent::Agent agent(options);
  agent.start();
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
  int bound = server.start(host, port);
  spdlog::info("gpuledger agent serving http://{}:{}/metrics", host, bound);
  install_stop_signals();
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  spdlog::info("stopping");
  server.stop();
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
