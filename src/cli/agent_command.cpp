#include <malloc.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/node_agent.h"
#include "cli/pins_on_exit.h"
#include "common/duration_text.h"
#include "common/log.h"
#include "device/doctor.h"
#include "fleet/fleet_doctor.h"

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
  // Before the start: a stop asked for while the agent starts is a stop too,
  // done when the start is (the pins' fate included).
  install_stop_signals();
  PinsOnExit pins_on_exit;
  std::string pin_dir;
  {
    NodeAgent node(cmd);
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
    pin_dir = node.bpf_pin_dir();
    if (!pin_dir.empty()) pins_on_exit = decide_pins_on_exit(cmd, node.cluster());
  }  // every probe's descriptor closed, every plane's lock released
  apply_pins_on_exit(pins_on_exit, pin_dir);
  return 0;
}

int run_doctor(const DoctorCommand& cmd) {
  device::DoctorOptions options;
  options.nvml_library = cmd.nvml_lib;
  options.dcgm_exporter_url = cmd.dcgm_exporter;
  options.pod_resources_socket = cmd.pod_resources_socket;
  options.nvidia_proc_root = cmd.nvidia_proc_root;
  options.btf_path = cmd.btf;
  options.bpf_pin_dir = cmd.bpf_pin_dir.empty() ? default_bpf_pin_dir(false) : cmd.bpf_pin_dir;
  options.orphaned_pins_after =
      std::chrono::duration_cast<std::chrono::seconds>(parse_duration(cmd.orphaned_pins_after));
  auto reports = device::run_doctor(options);
  if (const std::string fleet_db = cmd.fleet_db.resolve(); !fleet_db.empty()) {
    const auto check = fleet::check_fleet_db(fleet_db, cmd.fleet_db.password_file, cmd.store);
    reports.push_back({"fleet-db", check.ok ? device::PlaneStatus::kOk : device::PlaneStatus::kUnavailable, check.reason});
  }
  std::fputs(device::format_doctor_table(reports).c_str(), stdout);
  return device::doctor_exit_code(reports);
}

}  // namespace gpuledger::cli
