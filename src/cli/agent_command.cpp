#include <malloc.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/node_agent.h"
#include "common/log.h"
#include "device/doctor.h"

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
  NodeAgent node(cmd);
  install_stop_signals();
  auto next_observation = std::chrono::steady_clock::now();
  while (!stop_requested()) {
    if (std::chrono::steady_clock::now() >= next_observation) {
      node.observe();
      next_observation += std::chrono::milliseconds(cmd.ledger_interval_ms);
      // Scrape pages for thousands of workloads are tens of MiB, built whole:
      // hand the heap they used back instead of keeping it resident.
      ::malloc_trim(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  spdlog::info("stopping");
  node.store_window_in_progress();
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
