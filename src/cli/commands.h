#pragma once
// The subcommands of the gpuledger binary; main.cpp only parses and dispatches.
#include <string>
#include <vector>

namespace gpuledger::cli {

// Where the fleet database is: --fleet-db (or $GPULEDGER_FLEET_DB), a libpq URI
// or keyword string; its password from --fleet-db-password-file or PGPASSFILE.
struct FleetDbOptions {
  std::string url;            // the flag's value; empty: $GPULEDGER_FLEET_DB
  std::string password_file;
  // The connection string to use ("" when none): refuses a password given on
  // the command line (throws Error).
  std::string resolve(bool from_environment = true) const;
};

// `gpuledger fleet-db migrate`: applies the fleet database's migrations.
struct FleetDbCommand {
  FleetDbOptions db;
};
int run_fleet_db_migrate(const FleetDbCommand& cmd);

struct AgentCommand {
  std::string listen = "127.0.0.1:9401";  // 9400 is dcgm-exporter's
  std::string web_config_file;            // exporter-toolkit TLS and basic auth; empty: plain HTTP
  std::vector<std::string> cuda_libs;
  std::vector<std::string> cgroup_roots;  // extra places a node's hierarchy starts (kind, k3d, --cgroup-root)
  std::vector<std::string> infrastructure_namespaces;  // --infrastructure-namespace; empty: the defaults
  bool no_discovery = false;
  bool no_hold_new_drivers = false;
  bool launch_returns = false;
  std::string runtime_probes = "auto";  // off | auto | on (probes::parse_runtime_probes)
  std::vector<std::string> cuda_runtime_libs;
  bool per_probe_links = false;
  unsigned max_workloads = 16384;
  unsigned max_libraries = 256;  // driver files probed at once
  unsigned scan_interval_ms = 5000;
  std::string retire_after = "10m";  // workloads whose cgroup is gone leave /metrics after this
  std::string log_level = "info";
  // Kubernetes identity and GPU allocation (src/kubernetes); team rules (src/config).
  std::string kubeconfig;  // empty: the pod's service account when in a cluster, else no Kubernetes API
  std::string node_name;   // empty: $NODE_NAME, then the hostname
  std::string cluster_name;  // named on the bills and in the fleet database (resolve_cluster_name)
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";  // empty: off
  std::string config;      // the agent's YAML configuration file
  // Device plane (src/device): NVML is dlopen'd at run time; DCGM comes from dcgm-exporter.
  std::string nvml_lib = "libnvidia-ml.so.1";
  bool no_nvml = false;
  unsigned nvml_interval_ms = 5000;
  std::string dcgm_exporter;  // URL of dcgm-exporter's /metrics; empty: no DCGM
  unsigned dcgm_interval_ms = 15000;
  unsigned dcgm_timeout_ms = 3000;
  std::string nvidia_proc_root = "/proc/driver/nvidia";
  // NVIDIA driver ioctl plane and Xid errors (src/device/ioctl_plane.h, xid_monitor.h).
  bool no_nvidia_ioctl = false;
  std::vector<std::string> nvidia_ioctl_devices;  // MAJOR[:MINOR][=nvidia|uvm|other] or a /proc/devices name; empty: 195 + nvidia-uvm
  unsigned nvidia_ioctl_max_entries = 16384;
  bool no_xid = false;
  std::string kmsg = "/dev/kmsg";
  // The ledger (src/ledger): windows and charges in SQLite; prices from
  // --prices or the `cost:` section of --config. An empty store turns it off.
  std::string store = "/var/lib/gpuledger/ledger.db";
  std::string prices;
  unsigned ledger_interval_ms = 5000;
  // The data plane pinned in bpffs (probes/pin_store.h): empty: <bpffs>/gpuledger.
  std::string bpf_pin_dir;
  bool no_bpf_pins = false;
  // Leave the pins for the next agent at a stop (restarts and upgrades lose no
  // call); without it the agent removes them as it exits (cli/pins_on_exit.h).
  bool keep_pins_on_exit = false;
  std::string orphaned_pins_after = "24h";  // pins found with an older heartbeat are reported
  // The fleet ledger (src/fleet): closed windows shipped to PostgreSQL.
  FleetDbOptions fleet_db;
  unsigned fleet_db_interval_ms = 5000;
  unsigned fleet_db_batch = 500;
};
int run_agent(const AgentCommand& cmd);

// `gpuledger uninstall`: removes the pinned data plane (agent stopped first).
struct UninstallCommand {
  std::string bpf_pin_dir;  // empty: <bpffs>/gpuledger
};
int run_uninstall(const UninstallCommand& cmd);
// <bpffs>/gpuledger; "" when no bpffs is mounted and `may_mount` is false.
std::string default_bpf_pin_dir(bool may_mount);

// `gpuledger doctor`: which planes work on this node, and why not.
struct DoctorCommand {
  std::string nvml_lib = "libnvidia-ml.so.1";
  std::string dcgm_exporter;
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string nvidia_proc_root = "/proc/driver/nvidia";
  std::string btf = "/sys/kernel/btf/vmlinux";
  std::string bpf_pin_dir;                  // empty: <bpffs>/gpuledger
  std::string orphaned_pins_after = "24h";
  FleetDbOptions fleet_db;                  // empty: not checked
  std::string store;                        // for the fleet outbox's backlog; empty: not read
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
  bool check = false;  // list the billable exports the plan lacks; exit 1 when there are any
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
  FleetDbOptions fleet_db;       // the fleet database instead of the store
  std::string cluster, node;     // --cluster, --node filters of a fleet report; empty: all
  // Rightsizing (report/rightsizing.h): the `rightsizing:` section of --config,
  // overridden by --idle-after and --vram-headroom when given.
  std::string config;
  std::string idle_after;
  std::string vram_headroom;
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
};
int run_rightsize(const RightsizeCommand& cmd);

// Stops on SIGINT/SIGTERM: installs handlers and answers whether one came.
void install_stop_signals();
bool stop_requested();

}  // namespace gpuledger::cli
