#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/duration_text.h"
#include "common/error.h"
#include "common/unique_fd.h"
#include "common/log.h"
#include "device/doctor.h"
#include "fleet/fleet_doctor.h"
#include "ledger/device_quality.h"
#include "ledger/store.h"
#include "node/allocation_source.h"
#include "node/node_agent.h"
#include "node/probe_set_auto.h"
#include "probes/pin_store.h"
#include "slurm/job_mapping.h"
#include "slurm/slurm_gpu_holders.h"

namespace gpuledger::cli {

namespace {

// The job-mapping directory as the agent would read it now.
std::string job_mapping_state(const std::string& dir, device::PlaneStatus& status) {
  if (dir.empty()) {
    status = device::PlaneStatus::kUnavailable;
    return "no --hpc-job-mapping-dir given";
  }
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    status = device::PlaneStatus::kUnavailable;
    return dir + " cannot be opened (" + std::strerror(errno) + "): the agent would bill __allocation_unknown__";
  }
  try {
    const slurm::JobMapping m = slurm::read_job_mapping(fd.get());
    std::string out = dir + ": " + std::to_string(m.jobs_by_gpu.size()) + " GPU files, " +
                      std::to_string(m.skipped_files) + " files and " + std::to_string(m.skipped_lines) +
                      " lines skipped";
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
      out += "; WARNING: writable by others than root, who could name any running job as a GPU's holder";
    return out;
  } catch (const Error& e) {
    status = device::PlaneStatus::kUnavailable;
    return e.what();
  }
}

// Which allocation source the agent would take here, and what its bills mean then.
device::PlaneReport allocation_report(const DoctorCommand& cmd) {
  const auto asked = node::parse_allocation_source(cmd.allocation_source).value_or(node::AllocationSource::kAuto);
  const auto facts = node::gather_allocation_facts(cmd.pod_resources_socket, !cmd.kubeconfig.empty(),
                                                   !cmd.hpc_job_mapping_dir.empty());
  const auto choice = node::choose_allocation_source(asked, facts);
  device::PlaneReport report{"allocation", device::PlaneStatus::kOk,
                             std::string(node::to_string(choice.source)) + " (" + choice.why + "): " +
                                 node::allocation_meaning(choice.source)};
  const bool files = choice.source == node::AllocationSource::kHpcJobMapping ||
                     (choice.source == node::AllocationSource::kSlurm && !cmd.hpc_job_mapping_dir.empty());
  if (files) {
    report.reason += "; " + job_mapping_state(cmd.hpc_job_mapping_dir, report.status);
  } else if (choice.source == node::AllocationSource::kSlurm) {
    std::string why;
    const std::string node = slurm::ask_node_name(slurm::short_host_name(), &why);
    report.reason += node.empty() ? "; " + why + ": the agent would bill __allocation_unknown__"
                                  : "; the controller knows this host as node " + node;
    if (node.empty()) report.status = device::PlaneStatus::kUnavailable;
  }
  return report;
}

}  // namespace

int run_doctor(const DoctorCommand& cmd) {
  device::DoctorOptions options;
  options.nvml_library = cmd.nvml_lib;
  options.dcgm_exporter_url = cmd.dcgm_exporter;
  options.pod_resources_socket = cmd.pod_resources_socket;
  options.nvidia_proc_root = cmd.nvidia_proc_root;
  options.btf_path = cmd.btf;
  options.bpf_pin_dir = cmd.bpf_pin_dir.empty() ? probes::default_pin_dir(false) : cmd.bpf_pin_dir;
  options.orphaned_pins_after =
      std::chrono::duration_cast<std::chrono::seconds>(parse_duration(cmd.orphaned_pins_after));
  auto reports = device::run_doctor(options);
  // What `agent --probe-set auto` would choose here now, and why.
  const node::ProbeSetVerdict verdict = node::judge_this_node(cmd.nvml_lib);
  reports.push_back({"probe-set", device::PlaneStatus::kOk,
                     "auto would choose " + std::string(probes::probe_set_name(verdict.set)) + ": " + verdict.why});
  reports.push_back(allocation_report(cmd));
  if (const std::string fleet_db = cmd.fleet_db.resolve(); !fleet_db.empty()) {
    const auto check = fleet::check_fleet_db(fleet_db, cmd.fleet_db.password_file, cmd.store);
    reports.push_back({"fleet-db", check.ok ? device::PlaneStatus::kOk : device::PlaneStatus::kUnavailable, check.reason});
  }
  if (!cmd.store.empty()) {
    // The ledger's cross-checks of the device data (ledger/device_quality.h) over its last day.
    try {
      const ledger::Store store(cmd.store, ledger::Store::Mode::kReadOnly);
      const int64_t end = store.last_window_end().value_or(0);
      const auto summary = ledger::device_quality_summary(store, end - 86400, end);
      reports.push_back({"device-data", summary.suspect > 0 ? device::PlaneStatus::kDegraded : device::PlaneStatus::kOk,
                         summary.line()});
    } catch (const std::exception& e) {
      reports.push_back({"device-data", device::PlaneStatus::kUnavailable, std::string("store: ") + e.what()});
    }
  }
  std::fputs(device::format_doctor_table(reports).c_str(), stdout);
  return device::doctor_exit_code(reports);
}

Subcommand add_doctor_command(CLI::App& app) {
  auto o = std::make_shared<DoctorCommand>();
  CLI::App* cmd = app.add_subcommand("doctor", "Check which planes work on this node, and why not");
  cmd->footer(
      "Checks eBPF attribution, NVML, dcgm-exporter, Kubernetes, the pinned data plane and the fleet database; "
      "exits 0 when the attribution plane works.");
  cmd->add_option("--nvml-lib", o->nvml_lib, "NVML library to try")->capture_default_str();
  cmd->add_option("--dcgm-exporter", o->dcgm_exporter, "dcgm-exporter metrics URL to try");
  cmd->add_option("--pod-resources-socket", o->pod_resources_socket, "kubelet pod-resources socket")
      ->capture_default_str();
  cmd->add_option("--allocation-source", o->allocation_source, "The agent's --allocation-source, judged on this node")
      ->check(CLI::IsMember({"auto", "kubernetes", "slurm", "hpc-job-mapping", "none"}))
      ->capture_default_str();
  cmd->add_option("--hpc-job-mapping-dir", o->hpc_job_mapping_dir, "The agent's --hpc-job-mapping-dir");
  cmd->add_option("--kubeconfig", o->kubeconfig, "The agent's --kubeconfig (Kubernetes is then configured)");
  cmd->add_option("--nvidia-proc-root", o->nvidia_proc_root, "The NVIDIA driver's procfs directory")
      ->capture_default_str();
  cmd->add_option("--btf", o->btf, "Kernel BTF file")->capture_default_str();
  cmd->add_option("--bpf-pin-dir", o->bpf_pin_dir,
                         "The agent's --bpf-pin-dir, checked for pins no agent holds (default: <bpffs>/gpuledger)");
  add_fleet_db_options(cmd, o->fleet_db,
                       "Check that this node can ship to the fleet database (default: $GPULEDGER_FLEET_DB)");
  cmd->add_option("--store", o->store, "The agent's ledger store: the fleet backlog it holds, and its windows' device data (suspect or not)");
  cmd->add_option("--orphaned-pins-after", o->orphaned_pins_after,
                         "Pins whose last agent heartbeat is older than this are called orphaned")
      ->check(duration_validator())
      ->capture_default_str();

  return {cmd, [o] {
            log::set_level("error");  // the table carries each failure's reason; no verifier dumps
            return run_doctor(*o);
          }};
}

}  // namespace gpuledger::cli
