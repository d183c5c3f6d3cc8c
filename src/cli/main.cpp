// gpuledger: who used the GPUs, and how much.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/empty_option_values.h"
#include "common/duration_text.h"
#include "common/error.h"
#include "common/log.h"

namespace {

// What decides the recommendations (report/rightsizing.h), for `report` and `rightsize` alike.
void add_rightsizing_options(CLI::App* cmd, std::string& config, std::string& idle_after, std::string& vram_headroom) {
  cmd->add_option("--config", config,
                  "The agent's YAML configuration: its `rightsizing:` section (idle_after, vram_headroom, "
                  "mig_profiles) decides the recommendations");
  cmd->add_option("--idle-after", idle_after,
                  "Recommend release for a GPU held without a kernel launch for longer than this (e.g. 24h, 2d; "
                  "default: the configuration's, else 24h)");
  cmd->add_option("--vram-headroom", vram_headroom,
                  "VRAM kept above the peak when fitting a MIG profile, a fraction 0..1 (default: the "
                  "configuration's, else 0.2)");
}

// Where the fleet database is (cli/commands.h, FleetDbOptions), for every command that uses it.
void add_fleet_db_options(CLI::App* cmd, gpuledger::cli::FleetDbOptions& db, const std::string& what) {
  cmd->add_option("--fleet-db", db.url, what);
  cmd->add_option("--fleet-db-password-file", db.password_file,
                  "The fleet database's password, on the first line of this file (else PGPASSFILE or ~/.pgpass); "
                  "never put it on the command line");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuledger::cli;
  CLI::App app{"gpuledger - attributes GPU (CUDA) work to the workloads on this node with eBPF"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpuledger " GPULEDGER_VERSION);  // CMake project version

  // "90s", "10m", "1h" (common/duration_text.h).
  const CLI::Validator duration(
      [](std::string& text) {
        try {
          gpuledger::parse_duration(text);
          return std::string();
        } catch (const gpuledger::Error& e) {
          return std::string(e.what());
        }
      },
      "DURATION");

  AgentCommand agent;
  auto* agent_cmd = app.add_subcommand("agent", "Run the node agent: probe every libcuda, serve /metrics");
  agent_cmd->add_option("--listen", agent.listen,
                        "HOST:PORT to serve /metrics, /api/v1/workloads, /healthz, /readyz")
      ->capture_default_str();
  agent_cmd->add_option("--web-config-file", agent.web_config_file,
                        "TLS and basic authentication, in the Prometheus exporter-toolkit format "
                        "(tls_server_config, basic_auth_users) that node_exporter and dcgm-exporter read")
      ->check(CLI::ExistingFile);
  agent_cmd->add_option("--cuda-lib", agent.cuda_libs,
                        "A CUDA driver library to probe (repeatable); others are found on their own");
  agent_cmd->add_option("--cgroup-root", agent.cgroup_roots,
                        "A cgroup path below which the node's hierarchy starts again (repeatable): a kubelet "
                        "--cgroup-root, or the container a kind/k3d node runs in. Pods, Slurm jobs and "
                        "containers are recognised only at the top of the hierarchy and below these, never "
                        "inside a tenant's own cgroups");
  agent_cmd->add_option("--infrastructure-namespace", agent.infrastructure_namespaces,
                        "A namespace whose pods may run GPU infrastructure (repeatable; default: gpu-operator, "
                        "nvidia-gpu-operator, nvidia-device-plugin, kube-system). A CUDA MPS server or control "
                        "daemon (by its real executable) in a pod there, or in a host service outside "
                        "containers, is infrastructure: never a tenant, never billed, never __unallocated__");
  agent_cmd->add_flag("--no-hold-new-drivers", agent.no_hold_new_drivers,
                      "Do not stop the first process that maps a never-seen libcuda copy until its probes "
                      "are in place (its first calls may then go uncounted)");
  agent_cmd->add_flag("--no-discovery", agent.no_discovery,
                      "Probe only the --cuda-lib paths: no host paths, no tracing of executable mappings, no /proc scan");
  agent_cmd->add_flag("--per-probe-links", agent.per_probe_links,
                      "One perf-event link per uprobe even where the kernel has multi-uprobe links "
                      "(Linux 6.6+); the agent falls back to this by itself on older kernels");
  agent_cmd->add_flag("--launch-returns", agent.launch_returns,
                      "Also probe launch returns: counts only successful launches and their errors, at "
                      "the price of a return probe on the hottest calls");
  agent_cmd->add_option("--runtime-probes", agent.runtime_probes,
                        "Probe the CUDA runtime (libcudart, shared or linked into a program) too: auto counts "
                        "at that level only the calls the driver probes missed; on counts every runtime call "
                        "there, de-duplicated against the driver; off probes the driver only")
      ->check(CLI::IsMember({"off", "auto", "on"}))
      ->capture_default_str();
  agent_cmd->add_option("--cuda-runtime-lib", agent.cuda_runtime_libs,
                        "A file holding the CUDA runtime to probe (repeatable): a libcudart, or a program that "
                        "links it statically; others are found in the processes that use the driver");
  agent_cmd->add_option("--max-workloads", agent.max_workloads, "Capacity of the in-kernel workload map")
      ->capture_default_str();
  agent_cmd->add_option("--max-libraries", agent.max_libraries,
                        "Driver files probed at once (each ~100 probes and a descriptor), and CUDA runtime files "
                        "apart; more are refused, counted and logged. Unmapped, deleted ones are detached")
      ->capture_default_str();
  agent_cmd->add_option("--scan-interval-ms", agent.scan_interval_ms,
                        "Backstop scan of process maps for libcuda copies")
      ->capture_default_str();
  agent_cmd->add_option("--retire-after", agent.retire_after,
                        "How long a workload whose cgroup is gone stays on /metrics and /api/v1/workloads "
                        "(e.g. 90s, 10m, 1h); the ledger keeps its totals")
      ->check(duration)
      ->capture_default_str();
  agent_cmd->add_option("--store", agent.store, "The ledger's SQLite store; empty turns the ledger off")
      ->capture_default_str();
  agent_cmd->add_option("--prices", agent.prices,
                        "Prices YAML (currency, default_per_hour, per_model, per_uuid, ...); default: the "
                        "`cost:` section of --config");
  agent_cmd->add_option("--ledger-interval-ms", agent.ledger_interval_ms, "How often the ledger observes")
      ->capture_default_str();
  agent_cmd->add_option("--log-level", agent.log_level, "trace, debug, info, warn, error")->capture_default_str();
  agent_cmd->add_option("--kubeconfig", agent.kubeconfig,
                        "Kubeconfig to reach the Kubernetes API (default: the pod's service account when "
                        "running in a cluster; neither: no pod names, teams from --config)");
  agent_cmd->add_option("--node-name", agent.node_name, "This node's name in Kubernetes (default: $NODE_NAME, "
                        "then the hostname)");
  agent_cmd->add_option("--cluster-name", agent.cluster_name,
                        "This cluster's name, recorded in the ledger store for the bills and in the fleet database "
                        "(default: $GPULEDGER_CLUSTER_NAME, then $CLUSTER_NAME; the fleet database's default is "
                        "'default')")
      ->envname("GPULEDGER_CLUSTER_NAME");
  agent_cmd->add_option("--pod-resources-socket", agent.pod_resources_socket,
                        "The kubelet Pod Resources API socket, for GPU allocation (empty: off)")
      ->capture_default_str();
  agent_cmd->add_option("--config", agent.config,
                        "The agent's YAML configuration: team rules, non-Kubernetes team mappings, extra GPU "
                        "resources");
  agent_cmd->add_option("--nvml-lib", agent.nvml_lib, "NVML library to dlopen for device and per-process readings")
      ->capture_default_str();
  agent_cmd->add_flag("--no-nvml", agent.no_nvml, "Do not load NVML");
  agent_cmd->add_option("--nvml-interval-ms", agent.nvml_interval_ms, "NVML poll interval")->capture_default_str();
  agent_cmd->add_option("--dcgm-exporter", agent.dcgm_exporter,
                        "dcgm-exporter metrics URL to scrape for DCGM readings, e.g. http://127.0.0.1:9400/metrics");
  agent_cmd->add_option("--dcgm-interval-ms", agent.dcgm_interval_ms, "dcgm-exporter scrape interval")
      ->capture_default_str();
  agent_cmd->add_option("--dcgm-timeout-ms", agent.dcgm_timeout_ms, "dcgm-exporter connect/read timeout")
      ->capture_default_str();
  agent_cmd->add_option("--nvidia-proc-root", agent.nvidia_proc_root,
                        "The NVIDIA driver's procfs directory (GPU inventory)")
      ->capture_default_str();
  agent_cmd->add_flag("--no-nvidia-ioctl", agent.no_nvidia_ioctl,
                      "Do not trace ioctl calls into the NVIDIA driver (gpuledger_nvidia_ioctl*)");
  agent_cmd->add_option("--nvidia-ioctl-device", agent.nvidia_ioctl_devices,
                        "A device whose ioctls are traced (repeatable): MAJOR[:MINOR][=nvidia|uvm|other] or a "
                        "character device name from /proc/devices (default: 195 and nvidia-uvm when loaded)");
  agent_cmd->add_option("--nvidia-ioctl-max-entries", agent.nvidia_ioctl_max_entries,
                        "Capacity of the in-kernel (workload, device, escape) ioctl counter map")
      ->capture_default_str();
  agent_cmd->add_flag("--no-xid", agent.no_xid, "Do not count Xid errors from the kernel log");
  agent_cmd->add_option("--kmsg", agent.kmsg, "The kernel log device read for NVRM Xid lines")->capture_default_str();
  auto* no_pins = agent_cmd->add_flag(
      "--no-bpf-pins", agent.no_bpf_pins,
      "Pin nothing in bpffs: the probes, counters, contexts and live allocations go with the agent, and a restart "
      "starts them from zero");
  agent_cmd
      ->add_option("--bpf-pin-dir", agent.bpf_pin_dir,
                   "The bpffs directory the data plane is pinned in, so a restart or an upgrade takes it over and "
                   "loses no call (default: <bpffs>/gpuledger, bpffs found in /proc/self/mountinfo or mounted at "
                   "/sys/fs/bpf). Only one agent may use it; `gpuledger uninstall` removes it")
      ->excludes(no_pins);
  agent_cmd->add_flag(
      "--keep-pins-on-exit", agent.keep_pins_on_exit,
      "At a stop (SIGTERM, SIGINT) leave the pinned data plane for the next agent, so a restart or an upgrade "
      "loses no call (the shipped systemd unit and DaemonSet pass it). Without it the agent removes its pins and "
      "detaches its probes as it exits. In Kubernetes the pins go all the same when the agent's DaemonSet is "
      "deleted or no longer selects the node. A SIGKILL or an OOM kill leaves them either way");
  agent_cmd
      ->add_option("--orphaned-pins-after", agent.orphaned_pins_after,
                   "Pins found at start whose last agent heartbeat is older than this are reported as orphaned "
                   "(log, gpuledger_bpf_pins_orphaned_seconds): their probes trapped CUDA calls with no agent")
      ->check(duration)
      ->capture_default_str();

  add_fleet_db_options(agent_cmd, agent.fleet_db,
                       "Ship every closed window (charges, energy, usage shares) to this PostgreSQL fleet ledger: a "
                       "libpq URI or keyword string (default: $GPULEDGER_FLEET_DB; TLS by its sslmode). The store "
                       "stays the source of truth and keeps what is not shipped yet (docs/fleet-db.md)");
  agent_cmd->add_option("--fleet-db-interval-ms", agent.fleet_db_interval_ms,
                        "How often the shipper looks for windows to ship once the backlog is empty")
      ->capture_default_str();
  agent_cmd->add_option("--fleet-db-batch", agent.fleet_db_batch, "Windows per transaction sent to the fleet database")
      ->check(CLI::Range(1u, 2000u))
      ->capture_default_str();

  UninstallCommand uninstall;
  auto* uninstall_cmd = app.add_subcommand(
      "uninstall",
      "Remove what a stopped agent left on the node for its successor: its data plane pinned in bpffs (the "
      "probes, which trap every CUDA call while no agent runs, and the in-kernel counters, contexts and live "
      "allocations). An agent stopped without --keep-pins-on-exit removes them itself; run this after one "
      "killed or kept them, not between restarts or upgrades: the next agent takes the pins over. Refuses while "
      "an agent holds them; does nothing when nothing is pinned. The ledger store is left alone");
  uninstall_cmd->add_option("--bpf-pin-dir", uninstall.bpf_pin_dir,
                            "The agent's --bpf-pin-dir (default: <bpffs>/gpuledger)");

  DoctorCommand doctor;
  auto* doctor_cmd = app.add_subcommand(
      "doctor", "Check which planes work on this node (eBPF attribution, NVML, dcgm-exporter, Kubernetes) "
                "and why not; exits 0 when the attribution plane works");
  doctor_cmd->add_option("--nvml-lib", doctor.nvml_lib, "NVML library to try")->capture_default_str();
  doctor_cmd->add_option("--dcgm-exporter", doctor.dcgm_exporter, "dcgm-exporter metrics URL to try");
  doctor_cmd->add_option("--pod-resources-socket", doctor.pod_resources_socket, "kubelet pod-resources socket")
      ->capture_default_str();
  doctor_cmd->add_option("--nvidia-proc-root", doctor.nvidia_proc_root, "The NVIDIA driver's procfs directory")
      ->capture_default_str();
  doctor_cmd->add_option("--btf", doctor.btf, "Kernel BTF file")->capture_default_str();
  doctor_cmd->add_option("--bpf-pin-dir", doctor.bpf_pin_dir,
                         "The agent's --bpf-pin-dir, checked for pins no agent holds (default: <bpffs>/gpuledger)");
  add_fleet_db_options(doctor_cmd, doctor.fleet_db,
                       "Check that this node can ship to the fleet database (default: $GPULEDGER_FLEET_DB)");
  doctor_cmd->add_option("--store", doctor.store, "The agent's ledger store, for the fleet backlog it holds");
  doctor_cmd->add_option("--orphaned-pins-after", doctor.orphaned_pins_after,
                         "Pins whose last agent heartbeat is older than this are called orphaned")
      ->check(duration)
      ->capture_default_str();

  DemoCommand demo;
  auto* demo_cmd = app.add_subcommand(
      "demo", "Run the agent against the bundled CUDA driver simulator with simulated tenants in "
              "pod-shaped cgroups (real probes, real cgroups; no GPU needed)");
  demo_cmd->add_option("--listen", demo.listen, "Where the demo's agent serves /metrics")->capture_default_str();
  demo_cmd->add_option("--seconds", demo.seconds, "How long the tenants run")->capture_default_str();
  demo_cmd->add_option("--cuda-lib", demo.cuda_lib, "The simulator library (default: next to gpuledger)");
  demo_cmd->add_option("--cudasim", demo.cudasim, "The workload generator (default: next to gpuledger)");

  ReportCommand report;
  auto* report_cmd = app.add_subcommand(
      "report", "The GPU chargeback: GPU-hours held and busy, cost (busy, idle), efficiency and top wasters, "
                "from the ledger store (or the whole fleet from the PostgreSQL fleet ledger, or Prometheus)");
  report_cmd->add_option("--store", report.store, "The ledger store (SQLite)")->capture_default_str();
  auto* from_opt = report_cmd
                       ->add_option("--from", report.from,
                                    "Start: a date (2026-11-01, midnight UTC), RFC 3339, Unix seconds, now or "
                                    "relative (-24h, -7d)")
                       ->capture_default_str();
  auto* to_opt =
      report_cmd->add_option("--to", report.to, "End (exclusive), same forms as --from")->capture_default_str();
  report_cmd->add_option("--month", report.month, "A calendar month in UTC, e.g. 2026-11 (instead of --from/--to)")
      ->excludes(from_opt)
      ->excludes(to_opt);
  report_cmd->add_flag("--csv-totals", report.csv_totals, "CSV: end with a TOTAL row");
  auto* by_opt =
      report_cmd->add_option("--by", report.by, "team, namespace, pod, workload, gpu, or node (with --fleet-db)")->capture_default_str();
  report_cmd->add_option("--format", report.format,
                         "table, csv, json, html or focus (FinOps FOCUS CSV: one row per charge period, account and GPU)")
      ->capture_default_str();
  report_cmd->add_option("--granularity", report.granularity,
                         "CSV and FOCUS: one charge period per hour, day or month (UTC; default day)");
  report_cmd->add_flag("--wide", report.wide, "Table: every column, whole names (default: fits 120 columns)");
  report_cmd->add_option("-o,--output", report.output, "Write to this file instead of stdout");
  report_cmd->add_option("--prometheus", report.prometheus,
                         "Fleet report from this Prometheus server (e.g. http://prometheus:9090), which scrapes "
                         "every node's agent");
  auto* timeout_opt =
      report_cmd->add_option("--timeout-ms", report.timeout_ms, "Prometheus request timeout")->capture_default_str();
  add_fleet_db_options(report_cmd, report.fleet_db,
                       "The exact fleet bill from this PostgreSQL fleet ledger (libpq URI or keyword string): every "
                       "node's windows, nodes deleted since included; --by node groups by cluster/node");
  report_cmd->add_option("--cluster", report.cluster, "With --fleet-db: only this cluster");
  report_cmd->add_option("--node", report.node, "With --fleet-db: only this node");
  add_rightsizing_options(report_cmd, report.config, report.idle_after, report.vram_headroom);

  RightsizeCommand rightsize;
  auto* rightsize_cmd = app.add_subcommand(
      "rightsize", "What each workload should hold, from the ledger's evidence: release an idle GPU, a MIG profile or "
                   "time-slice share that fits, more, or keep; with the saving per month, largest first");
  rightsize_cmd->add_option("--store", rightsize.store, "The ledger store (SQLite)")->capture_default_str();
  auto* rs_from = rightsize_cmd->add_option("--from", rightsize.from, "Start, as for report --from")->capture_default_str();
  auto* rs_to = rightsize_cmd->add_option("--to", rightsize.to, "End (exclusive), as for report --to")->capture_default_str();
  rightsize_cmd->add_option("--month", rightsize.month, "A calendar month in UTC, e.g. 2026-11 (instead of --from/--to)")
      ->excludes(rs_from)
      ->excludes(rs_to);
  rightsize_cmd->add_option("--by", rightsize.by, "pod, workload, namespace or team")->capture_default_str();
  rightsize_cmd->add_option("--format", rightsize.format, "table, json or csv")->capture_default_str();
  rightsize_cmd->add_option("-o,--output", rightsize.output, "Write to this file instead of stdout");
  add_rightsizing_options(rightsize_cmd, rightsize.config, rightsize.idle_after, rightsize.vram_headroom);

  FleetDbCommand fleet_db;
  auto* fleet_db_cmd = app.add_subcommand("fleet-db", "The PostgreSQL fleet ledger (docs/fleet-db.md)");
  fleet_db_cmd->require_subcommand(1);
  auto* migrate_cmd = fleet_db_cmd->add_subcommand(
      "migrate", "Apply the fleet database's schema migrations (as its owner; safe to repeat) and create the "
                 "month partitions; agents refuse a schema older or newer than they know");
  add_fleet_db_options(migrate_cmd, fleet_db.db, "The fleet database (default: $GPULEDGER_FLEET_DB)");

  // Diagnostic, hidden from --help (empty group): used by scripts/gpu-validate.sh.
  ProbePlanCommand probe_plan;
  auto* probe_plan_cmd = app.add_subcommand(
      "probe-plan", "Print the CUDA driver entry points the agent probes in one library, one family a line");
  probe_plan_cmd->group("");
  probe_plan_cmd->add_option("--cuda-lib", probe_plan.cuda_lib, "The driver library (libcuda.so.1) to read")
      ->required();
  probe_plan_cmd->add_flag("--launch-returns", probe_plan.launch_returns, "As the agent's --launch-returns");
  probe_plan_cmd->add_flag("--check", probe_plan.check,
                           "Also list, as '# unprobed NAME' lines, every exported entry point that changes a bill "
                           "(by its name) the plan lacks; exit 1 when there is one");

  const std::vector<std::string> args = split_empty_option_values(argc, argv);
  std::vector<const char*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.c_str());
  CLI11_PARSE(app, static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  try {
    if (*agent_cmd) {
      gpuledger::log::set_level(agent.log_level);
      return run_agent(agent);
    }
    if (*doctor_cmd) {
      gpuledger::log::set_level("error");  // the table carries each failure's reason; no verifier dumps
      return run_doctor(doctor);
    }
    if (*probe_plan_cmd) return run_probe_plan(probe_plan);
    if (*migrate_cmd) return run_fleet_db_migrate(fleet_db);
    if (*uninstall_cmd) return run_uninstall(uninstall);
    if (*report_cmd) {
      gpuledger::log::set_level("warn");
      report.timeout_ms_given = timeout_opt->count() > 0;
      report.by_given = by_opt->count() > 0;
      try {
        return run_report(report);
      } catch (const std::exception& e) {  // one plain sentence on stderr, nothing on stdout or in -o
        std::cerr << "gpuledger report: " << e.what() << "\n";
        return 1;
      }
    }
    if (*rightsize_cmd) {
      gpuledger::log::set_level("warn");
      try {
        return run_rightsize(rightsize);
      } catch (const std::exception& e) {  // one plain sentence on stderr, nothing on stdout
        std::cerr << "gpuledger rightsize: " << e.what() << "\n";
        return 1;
      }
    }
    return run_demo(demo);
  } catch (const gpuledger::Error& e) {
    spdlog::error("{}", e.what());
    return 1;
  } catch (const std::exception& e) {  // e.g. std::filesystem::filesystem_error: a message, never an abort
    spdlog::error("{}", e.what());
    return 1;
  }
}
