#pragma once
// The subcommands of the gpuledger binary: each one's plain options struct,
// what runs it, and add_*_command, which declares its options (subcommand.h).
#include <string>
#include <vector>

#include "cli/subcommand.h"
#include "fleet/fleet_db_options.h"

namespace gpuledger::cli {

// In `gpuledger --help` order; `agent`'s options struct is node::NodeOptions.
Subcommand add_agent_command(CLI::App& app);
Subcommand add_uninstall_command(CLI::App& app);
Subcommand add_doctor_command(CLI::App& app);
Subcommand add_demo_command(CLI::App& app);
Subcommand add_report_command(CLI::App& app);
Subcommand add_rightsize_command(CLI::App& app);
Subcommand add_fleet_db_command(CLI::App& app);
Subcommand add_job_command(CLI::App& app);
Subcommand add_probe_plan_command(CLI::App& app);  // hidden: for the GPU validation kit


// `gpuledger fleet-db migrate`: applies the fleet database's migrations.
struct FleetDbCommand {
  fleet::FleetDbOptions db;
};
int run_fleet_db_migrate(const FleetDbCommand& cmd);


// `gpuledger uninstall`: removes the pinned data plane (agent stopped first).
struct UninstallCommand {
  std::string bpf_pin_dir;  // empty: <bpffs>/gpuledger
};
int run_uninstall(const UninstallCommand& cmd);

// `gpuledger doctor`: which planes work on this node, and why not.
struct DoctorCommand {
  std::string nvml_lib = "libnvidia-ml.so.1";
  std::string dcgm_exporter;
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string nvidia_proc_root = "/proc/driver/nvidia";
  std::string btf = "/sys/kernel/btf/vmlinux";
  std::string bpf_pin_dir;                  // empty: <bpffs>/gpuledger
  std::string orphaned_pins_after = "24h";
  fleet::FleetDbOptions fleet_db;                  // empty: not checked
  std::string store;                        // for the fleet outbox's backlog; empty: not read
  std::string allocation_source = "auto";   // the agent's --allocation-source, judged here
  std::string hpc_job_mapping_dir;
  std::string kubeconfig;
};
int run_doctor(const DoctorCommand& cmd);

struct DemoCommand {
  std::string listen = "127.0.0.1:9401";  // 9400 is dcgm-exporter's
  unsigned seconds = 16;
  std::string cuda_lib;   // default: the simulator next to this binary
  std::string cudasim;    // default: gpuledger-cudasim next to this binary
};
int run_demo(const DemoCommand& cmd);

// `gpuledger probe-plan` (hidden): the entry points the agent probes in one
// library, for the GPU validation kit's address check.
struct ProbePlanCommand {
  std::string cuda_lib;
  bool launch_returns = false;
  std::string probe_set = "full";  // billing | full (probes/probe_sets.h)
  bool check = false;  // list the billable exports the full plan lacks; exit 1 when there are any
};
int run_probe_plan(const ProbePlanCommand& cmd);

// `gpuledger report`: the chargeback from the ledger store, or with
// --prometheus for the whole fleet from a Prometheus server.
struct ReportCommand {
  std::string store = "/var/lib/gpuledger/ledger.db";
  std::string from = "-24h";
  std::string to = "now";
  std::string month;             // "2026-11": the month's range instead of from/to
  bool csv_totals = false;
  std::string by = "team";       // team | namespace | pod | workload | gpu
  std::string format = "table";  // table | csv | json | html | focus
  std::string output;            // file; empty: stdout
  std::string prometheus;        // base URL of a Prometheus server; empty: the local store
  unsigned timeout_ms = 10000;
  bool timeout_ms_given = false, by_given = false;
  std::string granularity;       // csv and focus: hour | day | month; empty: day
  bool wide = false;             // table: every column
  fleet::FleetDbOptions fleet_db;       // the fleet database instead of the store
  std::string cluster, node;     // --cluster, --node filters of a fleet report; empty: all
  // Rightsizing (report/rightsizing.h): the `rightsizing:` section of --config,
  // overridden by --idle-after, --vram-headroom and --min-evidence when given.
  std::string config;
  std::string idle_after;
  std::string vram_headroom;
  std::string min_evidence;
};
int run_report(const ReportCommand& cmd);

// `gpuledger rightsize`: the recommendations alone, sorted by saving.
struct RightsizeCommand {
  std::string store = "/var/lib/gpuledger/ledger.db";
  std::string from = "-24h";
  std::string to = "now";
  std::string month;
  std::string by = "pod";        // pod | workload | namespace | team
  std::string format = "table";  // table | json | csv
  std::string output;
  std::string config;
  std::string idle_after;
  std::string vram_headroom;
  std::string min_evidence;
};
int run_rightsize(const RightsizeCommand& cmd);


}  // namespace gpuledger::cli
