#pragma once
// Everything `gpuledger agent` is told: the command line and the files it
// names, as plain values. The CLI fills it (cli/agent_options.cpp); the node
// agent (node_agent.h) builds the planes from it.
#include <string>
#include <vector>

#include "fleet/fleet_db_options.h"

namespace gpuledger::node {

struct NodeOptions {
  std::string listen = "127.0.0.1:9401";  // 9400 is dcgm-exporter's
  std::string web_config_file;            // exporter-toolkit TLS and basic auth; empty: plain HTTP
  std::vector<std::string> cuda_libs;
  std::vector<std::string> cgroup_roots;  // extra places a node's hierarchy starts (kind, k3d, --cgroup-root)
  std::vector<std::string> infrastructure_namespaces;  // --infrastructure-namespace; empty: the defaults
  bool no_discovery = false;
  bool no_hold_new_drivers = false;
  bool launch_returns = false;
  // auto | billing | full (probes::parse_probe_set); empty: the config file's
  // probes.set, else auto.
  std::string probe_set;
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
  // Who holds each GPU (node/allocation_source.h): auto | kubernetes | slurm |
  // hpc-job-mapping | none; empty: the config file's allocation.source, else auto.
  std::string allocation_source;
  std::string hpc_job_mapping_dir;  // the job-mapping files (slurm/job_mapping.h); empty: the config's
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
  fleet::FleetDbOptions fleet_db;
  unsigned fleet_db_interval_ms = 5000;
  unsigned fleet_db_batch = 500;
};

}  // namespace gpuledger::node
