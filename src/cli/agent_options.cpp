// `gpuledger agent`: its options, by plane, into node::NodeOptions (node/node_options.h).
#include <memory>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/log.h"
#include "node/node_agent.h"

namespace gpuledger::cli {
namespace {

// The attribution plane: which libraries are probed, and how.
void add_attribution_options(CLI::App* cmd, node::NodeOptions& o) {
  cmd->add_option("--cuda-lib", o.cuda_libs,
                  "A CUDA driver library to probe (repeatable); others are found on their own");
  cmd->add_option("--cgroup-root", o.cgroup_roots,
                  "A cgroup path below which the node's hierarchy starts again (repeatable): a kubelet "
                  "--cgroup-root, or the container a kind/k3d node runs in. Pods, Slurm jobs and "
                  "containers are recognised only at the top of the hierarchy and below these, never "
                  "inside a tenant's own cgroups");
  cmd->add_option("--infrastructure-namespace", o.infrastructure_namespaces,
                  "A namespace whose pods may run GPU infrastructure (repeatable; default: gpu-operator, "
                  "nvidia-gpu-operator, nvidia-device-plugin, kube-system). A CUDA MPS server or control "
                  "daemon (by its real executable) in a pod there, or in a host service outside "
                  "containers, is infrastructure: never a tenant, never billed, never __unallocated__");
  cmd->add_flag("--no-hold-new-drivers", o.no_hold_new_drivers,
                "Do not stop the first process that maps a never-seen libcuda copy until its probes "
                "are in place (its first calls may then go uncounted)");
  cmd->add_flag("--no-discovery", o.no_discovery,
                "Probe only the --cuda-lib paths: no host paths, no tracing of executable mappings, no /proc scan");
  cmd->add_flag("--per-probe-links", o.per_probe_links,
                "One perf-event link per uprobe even where the kernel has multi-uprobe links "
                "(Linux 6.6+); the agent falls back to this by itself on older kernels");
  cmd->add_flag("--launch-returns", o.launch_returns,
                "Also probe the returns of launches, asynchronous copies and memsets: counts only successful "
                "calls and their errors, at the price of a return probe on the hottest calls");
  cmd->add_option("--probe-set", o.probe_set,
                  "Which CUDA entry points are probed: full probes every family; billing none called per "
                  "unit of work (launches, copies, memsets, synchronisations, queries, event records), so "
                  "those cost the tenant no trap and are not counted; auto chooses. Default: the config "
                  "file's probes.set, else auto (docs/probe-sets.md)")
      ->check(CLI::IsMember({"auto", "billing", "full"}));
  cmd->add_option("--runtime-probes", o.runtime_probes,
                  "Probe the CUDA runtime (libcudart, shared or linked into a program) too: auto counts "
                  "at that level only the calls the driver probes missed; on counts every runtime call "
                  "there, de-duplicated against the driver; off probes the driver only")
      ->check(CLI::IsMember({"off", "auto", "on"}))
      ->capture_default_str();
  cmd->add_option("--cuda-runtime-lib", o.cuda_runtime_libs,
                  "A file holding the CUDA runtime to probe (repeatable): a libcudart, or a program that "
                  "links it statically; others are found in the processes that use the driver");
  cmd->add_option("--max-workloads", o.max_workloads, "Capacity of the in-kernel workload map")->capture_default_str();
  cmd->add_option("--max-libraries", o.max_libraries,
                  "Driver files probed at once (each ~100 probes and a descriptor), and CUDA runtime files "
                  "apart; more are refused, counted and logged. Unmapped, deleted ones are detached")
      ->capture_default_str();
  cmd->add_option("--scan-interval-ms", o.scan_interval_ms, "Backstop scan of process maps for libcuda copies")
      ->capture_default_str();
  cmd->add_option("--retire-after", o.retire_after,
                  "How long a workload whose cgroup is gone stays on /metrics and /api/v1/workloads "
                  "(e.g. 90s, 10m, 1h); the ledger keeps its totals")
      ->check(duration_validator())
      ->capture_default_str();
}

// The ledger: where it is stored, what it prices, how often it observes.
void add_ledger_options(CLI::App* cmd, node::NodeOptions& o) {
  cmd->add_option("--store", o.store, "The ledger's SQLite store; empty turns the ledger off")->capture_default_str();
  cmd->add_option("--prices", o.prices,
                  "Prices YAML (currency, default_per_hour, per_model, per_uuid, ...); default: the "
                  "`cost:` section of --config");
  cmd->add_option("--ledger-interval-ms", o.ledger_interval_ms, "How often the ledger observes")->capture_default_str();
}

// Names, teams and GPU allocation: Kubernetes and the configuration file.
void add_kubernetes_options(CLI::App* cmd, node::NodeOptions& o) {
  cmd->add_option("--kubeconfig", o.kubeconfig,
                  "Kubeconfig to reach the Kubernetes API (default: the pod's service account when "
                  "running in a cluster; neither: no pod names, teams from --config)");
  cmd->add_option("--node-name", o.node_name,
                  "This node's name in Kubernetes (default: $NODE_NAME, "
                  "then the hostname)");
  cmd->add_option("--cluster-name", o.cluster_name,
                  "This cluster's name, recorded in the ledger store for the bills and in the fleet database "
                  "(default: $GPULEDGER_CLUSTER_NAME, then $CLUSTER_NAME; the fleet database's default is "
                  "'default')")
      ->envname("GPULEDGER_CLUSTER_NAME");
  cmd->add_option("--pod-resources-socket", o.pod_resources_socket,
                  "The kubelet Pod Resources API socket, for GPU allocation (empty: off)")
      ->capture_default_str();
  cmd->add_option("--allocation-source", o.allocation_source,
                  "Who holds each GPU: auto (Kubernetes where a kubelet answers or is configured, Slurm where "
                  "slurmd runs, the job-mapping files where --hpc-job-mapping-dir is given, else none), "
                  "kubernetes, slurm, hpc-job-mapping or none (the GPU's users hold it); default: allocation.source "
                  "in --config, else auto")
      ->check(CLI::IsMember({"auto", "kubernetes", "slurm", "hpc-job-mapping", "none"}));
  cmd->add_option("--hpc-job-mapping-dir", o.hpc_job_mapping_dir,
                  "The directory of HPC job-mapping files (dcgm-exporter's convention: one file per GPU index, "
                  "its lines the ids of the jobs holding it), written by the Slurm prolog in deploy/slurm/");
  cmd->add_option("--config", o.config,
                  "The agent's YAML configuration: team rules, non-Kubernetes team mappings, extra GPU "
                  "resources");
}

// The device plane: NVML, dcgm-exporter, the driver's ioctls and Xid errors.
void add_device_options(CLI::App* cmd, node::NodeOptions& o) {
  cmd->add_option("--nvml-lib", o.nvml_lib, "NVML library to dlopen for device and per-process readings")
      ->capture_default_str();
  cmd->add_flag("--no-nvml", o.no_nvml, "Do not load NVML");
  cmd->add_option("--nvml-interval-ms", o.nvml_interval_ms, "NVML poll interval")->capture_default_str();
  cmd->add_option("--dcgm-exporter", o.dcgm_exporter,
                  "dcgm-exporter metrics URL to scrape for DCGM readings, e.g. http://127.0.0.1:9400/metrics");
  cmd->add_option("--dcgm-interval-ms", o.dcgm_interval_ms, "dcgm-exporter scrape interval")->capture_default_str();
  cmd->add_option("--dcgm-timeout-ms", o.dcgm_timeout_ms, "dcgm-exporter connect/read timeout")->capture_default_str();
  cmd->add_option("--nvidia-proc-root", o.nvidia_proc_root, "The NVIDIA driver's procfs directory (GPU inventory)")
      ->capture_default_str();
  cmd->add_flag("--no-nvidia-ioctl", o.no_nvidia_ioctl,
                "Do not trace ioctl calls into the NVIDIA driver (gpuledger_nvidia_ioctl*)");
  cmd->add_option("--nvidia-ioctl-device", o.nvidia_ioctl_devices,
                  "A device whose ioctls are traced (repeatable): MAJOR[:MINOR][=nvidia|uvm|other] or a "
                  "character device name from /proc/devices (default: 195 and nvidia-uvm when loaded)");
  cmd->add_option("--nvidia-ioctl-max-entries", o.nvidia_ioctl_max_entries,
                  "Capacity of the in-kernel (workload, device, escape) ioctl counter map")
      ->capture_default_str();
  cmd->add_flag("--no-xid", o.no_xid, "Do not count Xid errors from the kernel log");
  cmd->add_option("--kmsg", o.kmsg, "The kernel log device read for NVRM Xid lines")->capture_default_str();
}

// The data plane pinned in bpffs, across restarts and upgrades.
void add_pin_options(CLI::App* cmd, node::NodeOptions& o) {
  auto* no_pins = cmd->add_flag(
      "--no-bpf-pins", o.no_bpf_pins,
      "Pin nothing in bpffs: the probes, counters, contexts and live allocations go with the agent, and a restart "
      "starts them from zero");
  cmd->add_option("--bpf-pin-dir", o.bpf_pin_dir,
                  "The bpffs directory the data plane is pinned in, so a restart or an upgrade takes it over and "
                  "loses no call (default: <bpffs>/gpuledger, bpffs found in /proc/self/mountinfo or mounted at "
                  "/sys/fs/bpf). Only one agent may use it; `gpuledger uninstall` removes it")
      ->excludes(no_pins);
  cmd->add_flag(
      "--keep-pins-on-exit", o.keep_pins_on_exit,
      "At a stop (SIGTERM, SIGINT) leave the pinned data plane for the next agent, so a restart or an upgrade "
      "loses no call (the shipped systemd unit and DaemonSet pass it). Without it the agent removes its pins and "
      "detaches its probes as it exits. In Kubernetes the pins go all the same when the agent's DaemonSet is "
      "deleted or no longer selects the node. A SIGKILL or an OOM kill leaves them either way");
  cmd->add_option("--orphaned-pins-after", o.orphaned_pins_after,
                  "Pins found at start whose last agent heartbeat is older than this are reported as orphaned "
                  "(log, gpuledger_bpf_pins_orphaned_seconds): their probes trapped CUDA calls with no agent")
      ->check(duration_validator())
      ->capture_default_str();
}

// Shipping closed windows to the fleet database.
void add_fleet_options(CLI::App* cmd, node::NodeOptions& o) {
  add_fleet_db_options(cmd, o.fleet_db,
                       "Ship every closed window (charges, energy, usage shares) to this PostgreSQL fleet ledger: a "
                       "libpq URI or keyword string (default: $GPULEDGER_FLEET_DB; TLS by its sslmode). The store "
                       "stays the source of truth and keeps what is not shipped yet (docs/fleet-db.md)");
  cmd->add_option("--fleet-db-interval-ms", o.fleet_db_interval_ms,
                  "How often the shipper looks for windows to ship once the backlog is empty")
      ->capture_default_str();
  cmd->add_option("--fleet-db-batch", o.fleet_db_batch, "Windows per transaction sent to the fleet database (grown with a backlog: a quarter of it, up to 4000)")
      ->check(CLI::Range(1u, 2000u))
      ->capture_default_str();
}

}  // namespace

Subcommand add_agent_command(CLI::App& app) {
  auto o = std::make_shared<node::NodeOptions>();
  CLI::App* cmd = app.add_subcommand("agent", "Run the node agent: probe every libcuda, serve /metrics");
  cmd->add_option("--listen", o->listen, "HOST:PORT to serve /metrics, /api/v1/workloads, /healthz, /readyz")
      ->capture_default_str();
  cmd->add_option("--web-config-file", o->web_config_file,
                  "TLS and basic authentication, in the Prometheus exporter-toolkit format "
                  "(tls_server_config, basic_auth_users) that node_exporter and dcgm-exporter read")
      ->check(CLI::ExistingFile);
  add_attribution_options(cmd, *o);
  add_ledger_options(cmd, *o);
  cmd->add_option("--log-level", o->log_level, "trace, debug, info, warn, error")->capture_default_str();
  add_kubernetes_options(cmd, *o);
  add_device_options(cmd, *o);
  add_pin_options(cmd, *o);
  add_fleet_options(cmd, *o);
  return {cmd, [o] {
            log::set_level(o->log_level);
            return node::run_node_agent(*o);
          }};
}

}  // namespace gpuledger::cli
