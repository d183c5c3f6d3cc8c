#include "node/node_agent.h"

#include <malloc.h>

#include <cstdlib>
#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "attribution/attribution_plane.h"
#include "common/duration_text.h"
#include "common/error.h"
#include "common/log.h"
#include "common/stop_signals.h"
#include "config/agent_config.h"
#include "device/device_plane.h"
#include "device/ioctl_plane.h"
#include "device/xid_monitor.h"
#include "export/health.h"
#include "export/http_server.h"
#include "export/web_config.h"
#include "fleet/fleet_shipper.h"
#include "kubernetes/cluster_config.h"
#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/kubernetes_metrics.h"
#include "kubernetes/pod_resources_client.h"
#include "kubernetes/team_namer.h"
#include "ledger/device_checks_config.h"
#include "ledger/ledger_plane.h"
#include "ledger/prices.h"
#include "node/allocation_source.h"
#include "node/allocation_unknown.h"
#include "node/job_holders.h"
#include "node/observation_inputs.h"
#include "node/pins_on_exit.h"
#include "node/probe_set_auto.h"
#include "node/served_content.h"
#include "node/workload_efficiency.h"
#include "probes/pin_heartbeat.h"
#include "probes/pin_store.h"
#include "slurm/job_mapping_watch.h"
#include "slurm/slurm_cgroups.h"
#include "slurm/slurm_gpu_holders.h"
#include "slurm/slurm_jobs.h"

namespace gpuledger::node {
namespace {

// --cluster-name (or $GPULEDGER_CLUSTER_NAME, through the option), then the
// $CLUSTER_NAME many clusters already set; empty: not named.
std::string resolve_cluster_name(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("CLUSTER_NAME");
  return env ? env : "";
}

device::DevicePlaneOptions device_options(const NodeOptions& cmd) {
  device::DevicePlaneOptions o;
  o.nvml = !cmd.no_nvml;
  o.nvml_library = cmd.nvml_lib;
  o.nvml_interval = std::chrono::milliseconds(cmd.nvml_interval_ms);
  o.dcgm_exporter_url = cmd.dcgm_exporter;
  o.dcgm_interval = std::chrono::milliseconds(cmd.dcgm_interval_ms);
  o.scrape.timeout = std::chrono::milliseconds(cmd.dcgm_timeout_ms);
  o.dcgm_stale_after = std::max(std::chrono::milliseconds(60000), 3 * o.dcgm_interval);
  o.nvidia_proc_root = cmd.nvidia_proc_root;
  o.hostname = kubernetes::resolve_node_name(cmd.node_name);  // the `Hostname` label: the node, not the pod
  return o;
}

std::optional<kubernetes::ClusterConfig> cluster_config(const NodeOptions& cmd) {
  try {
    return kubernetes::discover_cluster_config(cmd.kubeconfig);
  } catch (const Error& e) {
    if (!cmd.kubeconfig.empty()) throw;  // an explicit --kubeconfig that cannot be used is an operator error
    spdlog::error("kubernetes: {}; going on without pod names", e.what());
    return std::nullopt;
  }
}

ledger::PriceBook price_book(const NodeOptions& cmd) {
  if (!cmd.prices.empty()) return ledger::load_prices(cmd.prices);
  if (!cmd.config.empty())
    if (auto section = ledger::load_cost_section(cmd.config)) return *section;
  spdlog::warn(
      "ledger: no GPU prices are configured, so every GPU-hour is billed at 0. Give the agent a price list "
      "with --prices FILE or a `cost:` section in --config (docs/ledger.md)");
  return {};
}

// The fleet shipper of --fleet-db (src/fleet), which needs the store: its outbox.
std::unique_ptr<fleet::FleetShipper> fleet_shipper(const NodeOptions& cmd) {
  const std::string conninfo = cmd.fleet_db.resolve();
  if (conninfo.empty()) return nullptr;
  if (cmd.store.empty()) throw Error("--fleet-db ships the ledger's windows: it needs a --store");
  fleet::FleetShipperOptions o;
  o.conninfo = conninfo;
  o.password_file = cmd.fleet_db.password_file;
  o.store_path = cmd.store;
  const std::string cluster = resolve_cluster_name(cmd.cluster_name);
  o.origin = {cluster.empty() ? "default" : cluster, kubernetes::resolve_node_name(cmd.node_name)};
  o.interval = std::chrono::milliseconds(cmd.fleet_db_interval_ms);
  o.batch_windows = cmd.fleet_db_batch;
  return std::make_unique<fleet::FleetShipper>(std::move(o));
}

// The facts about shared GPUs the allocation needs: the API's scheduler
// records and node labels, and each GPU's memory (used + free) for memory fractions.
std::function<kubernetes::SharingFacts()> sharing_facts(const kubernetes::KubernetesMetadata* k8s,
                                                        device::DevicePlane* device_plane,
                                                        const config::AgentConfig& config) {
  kubernetes::RecordTrust trust;
  if (config.hami_scheduler_managers) trust.hami_managers = *config.hami_scheduler_managers;
  if (config.kai_scheduler_managers) trust.kai_managers = *config.kai_scheduler_managers;
  return [k8s, device_plane, reservation = config.kai_reservation_namespace, trust] {
    auto facts = k8s ? k8s->sharing_facts() : kubernetes::SharingFacts{};
    facts.kai_reservation_namespace = reservation;
    facts.trust = trust;
    for (const auto& r : device_plane->snapshot().readings) {
      auto used = r[device::DeviceField::kMemoryUsedBytes], free = r[device::DeviceField::kMemoryFreeBytes];
      if (r.gpu_instance_id.empty() && used && free)
        facts.device_memory_mib.try_emplace(r.uuid, static_cast<uint64_t>((*used + *free) / (1024.0 * 1024.0)));
    }
    return facts;
  };
}

// The NVIDIA driver ioctl plane: it degrades to its self-metrics when it
// cannot run (no BPF); it shares the attribution plane's pins and names.
std::unique_ptr<device::IoctlPlane> ioctl_plane(const NodeOptions& cmd, const attribution::AttributionOptions& options) {
  device::IoctlPlaneOptions ioctl_options;
  ioctl_options.devices = device::resolve_ioctl_devices(cmd.nvidia_ioctl_devices);
  ioctl_options.max_entries = cmd.nvidia_ioctl_max_entries;
  ioctl_options.bpf_pin_dir = options.bpf_pin_dir;
  ioctl_options.namer = options.namer;
  ioctl_options.classifier = options.classifier;
  return std::make_unique<device::IoctlPlane>(ioctl_options);
}

}  // namespace

struct NodeAgent::Parts {
  // First in, last out: its store lock is held until everything else stopped.
  std::unique_ptr<ledger::LedgerPlane> ledger;  // null with --store ""
  std::unique_ptr<fleet::FleetShipper> shipper;  // null without --fleet-db; stops before the ledger closes
  std::unique_ptr<exporter::HttpListener> listener;  // bound early; the server takes it
  exporter::Heartbeat main_loop;
  config::AgentConfig config;
  std::shared_ptr<kubernetes::PodDirectory> pods;
  std::optional<kubernetes::ClusterConfig> cluster;
  std::unique_ptr<kubernetes::KubernetesMetadata> k8s;
  std::unique_ptr<kubernetes::PodResourcesMonitor> pod_resources;  // only with the kubernetes source
  AllocationChoice allocation;
  std::unique_ptr<slurm::JobMappingWatch> job_mapping;  // only with the hpc-job-mapping source
  identity::CgroupMounts cgroup_mounts;                 // where the running jobs' cgroups are looked for
  std::unique_ptr<slurm::SlurmGpuHolders> slurm_gpus;   // only with the slurm source: scontrol's GRES
  std::unique_ptr<slurm::SlurmJobFacts> slurm_jobs;     // the jobs' users and accounts from squeue; with either
  std::shared_ptr<const identity::WorkloadNamer> namer;
  std::unique_ptr<kubernetes::KubernetesMetrics> k8s_metrics;
  std::unique_ptr<device::DevicePlane> devices;
  std::unique_ptr<device::IoctlPlane> ioctls;  // null with --no-nvidia-ioctl
  std::unique_ptr<device::XidMonitor> xids;    // null with --no-xid
  std::unique_ptr<attribution::AttributionPlane> agent;
  std::unique_ptr<ProbeSetAuto> probe_set_auto;  // null unless --probe-set auto
  ledger::PriceBook prices;
  std::unique_ptr<WorkloadEfficiencyMetrics> efficiency;  // outlives the server that reads it
  std::unique_ptr<exporter::HttpServer> server;
  int port = 0;
  std::string bpf_pin_dir;

  // The constructor's stages, in the order it runs them.
  void open_ledger(const NodeOptions& cmd);
  void choose_allocation(const NodeOptions& cmd);
  void use_slurm_jobs(const std::string& dir, bool slurmd_running);
  void watch_kubernetes(const NodeOptions& cmd);
  attribution::AttributionOptions attribution_options(const NodeOptions& cmd);
  void start_xid_monitor(const NodeOptions& cmd, const attribution::AttributionOptions& options);
  void serve(const NodeOptions& cmd, const exporter::HttpServerOptions& http, const std::string& host);
};

// A store that cannot be used degrades the ledger only (ledger_plane.h).
void NodeAgent::Parts::open_ledger(const NodeOptions& cmd) {
  if (cmd.store.empty()) return;
  prices = price_book(cmd);
  ledger::LedgerPlaneOptions ledger_options{cmd.store, prices};
  ledger_options.node = kubernetes::resolve_node_name(cmd.node_name);
  ledger_options.cluster = resolve_cluster_name(cmd.cluster_name);
  // Ledger series of gone accounts leave /metrics like the workloads do
  // (at least two ledger observations, as for the workloads below).
  ledger_options.retire_series_after =
      std::max(parse_duration(cmd.retire_after), 2 * std::chrono::milliseconds(cmd.ledger_interval_ms));
  if (!cmd.config.empty()) ledger_options.device_checks = ledger::load_device_checks_section(cmd.config);
  ledger = std::make_unique<ledger::LedgerPlane>(std::move(ledger_options));
}

// Who holds each GPU (allocation_source.h): the command line, else the
// configuration, else auto's look at this node.
void NodeAgent::Parts::choose_allocation(const NodeOptions& cmd) {
  const std::string asked = !cmd.allocation_source.empty() ? cmd.allocation_source : config.allocation_source;
  const std::string dir = !cmd.hpc_job_mapping_dir.empty() ? cmd.hpc_job_mapping_dir : config.hpc_job_mapping_dir;
  // A --kubeconfig, or a --pod-resources-socket other than the default, is Kubernetes configured.
  const bool socket_named = !cmd.pod_resources_socket.empty() &&
                            cmd.pod_resources_socket != NodeOptions{}.pod_resources_socket;
  const auto facts =
      gather_allocation_facts(cmd.pod_resources_socket, !cmd.kubeconfig.empty() || socket_named, !dir.empty());
  const AllocationSource wanted = parse_allocation_source(asked).value_or(AllocationSource::kAuto);
  allocation = choose_allocation_source(wanted, facts);
  // With a job-mapping directory, the prolog's files say which job holds which GPU
  // (what dcgm-exporter reads too); else the controller does (scontrol's GRES).
  if (allocation.source == AllocationSource::kSlurm && !dir.empty())
    allocation = {AllocationSource::kHpcJobMapping, allocation.why + "; its jobs' GPUs from --hpc-job-mapping-dir"};
  if (allocation.source == AllocationSource::kHpcJobMapping && dir.empty())
    throw Error("--allocation-source hpc-job-mapping needs --hpc-job-mapping-dir");
  if (allocation.source == AllocationSource::kSlurm || allocation.source == AllocationSource::kHpcJobMapping)
    use_slurm_jobs(dir, facts.slurmd_running);
  spdlog::info("allocation source {} ({}): {}", to_string(allocation.source), allocation.why,
               allocation_meaning(allocation.source));
}

// The jobs running here (their cgroups) hold the GPUs the files or the
// controller give them; squeue says their accounts where Slurm runs.
void NodeAgent::Parts::use_slurm_jobs(const std::string& dir, bool slurmd_running) {
  cgroup_mounts = identity::discover_cgroup_mounts();
  auto running_jobs = [mounts = cgroup_mounts] {
    std::vector<std::string> ids;
    for (const auto& [id, job] : slurm::live_slurm_jobs(mounts)) ids.push_back(id);
    return ids;
  };
  if (allocation.source == AllocationSource::kHpcJobMapping)
    job_mapping = std::make_unique<slurm::JobMappingWatch>(dir);
  else
    slurm_gpus = std::make_unique<slurm::SlurmGpuHolders>(running_jobs, std::chrono::seconds(30),
                                                          slurm::short_host_name());
  if (slurmd_running || slurm_gpus)  // the controller's word on each job here: its user and account (`teams:`, the bill)
    slurm_jobs = std::make_unique<slurm::SlurmJobFacts>(running_jobs, std::chrono::seconds(60));
}

// Names and teams: the Kubernetes API (retried in the background; the
// UID-based identity meanwhile) and the configuration's rules; the kubelet's
// allocation. Made here, started once the attribution plane is.
void NodeAgent::Parts::watch_kubernetes(const NodeOptions& cmd) {
  pods = std::make_shared<kubernetes::PodDirectory>(config.pod_grace_period);
  cluster = cluster_config(cmd);
  if (cluster) {
    kubernetes::KubernetesOptions k8s_options;
    k8s_options.cluster = *cluster;
    k8s_options.node_name = kubernetes::resolve_node_name(cmd.node_name);
    k8s_options.watch_namespaces = !config.team_rule.namespace_label_key.empty();
    k8s = std::make_unique<kubernetes::KubernetesMetadata>(k8s_options, pods);
  } else {
    spdlog::info("kubernetes: no --kubeconfig and not in a cluster: workloads keep their cgroup identity");
  }
  if (allocation.source == AllocationSource::kKubernetes && !cmd.pod_resources_socket.empty())
    pod_resources = std::make_unique<kubernetes::PodResourcesMonitor>(
        cmd.pod_resources_socket, kubernetes::AllocationOptions{config.extra_gpu_resources, config.dra_drivers},
        config.pod_resources_interval);
  if (pod_resources) {
    pod_resources->set_keep_last_answer(config.allocation_keep);
    pod_resources->set_sharing_facts(sharing_facts(k8s.get(), devices.get(), config));
  }
  k8s_metrics = std::make_unique<kubernetes::KubernetesMetrics>(pods, config.team_rule, k8s.get(), pod_resources.get());
}

attribution::AttributionOptions NodeAgent::Parts::attribution_options(const NodeOptions& cmd) {
  attribution::AttributionOptions options;
  options.cuda_libs = cmd.cuda_libs;
  options.discover = !cmd.no_discovery;
  options.hold_new_drivers = !cmd.no_hold_new_drivers;
  options.launch_returns = cmd.launch_returns;
  options.probe_set = cmd.probe_set.empty() ? config.probe_set.value_or(probes::ProbeSet::kAuto)
                                            : probes::parse_probe_set(cmd.probe_set).value_or(probes::ProbeSet::kAuto);
  options.runtime_probes = probes::parse_runtime_probes(cmd.runtime_probes).value_or(probes::RuntimeProbes::kAuto);
  options.runtime_libs = cmd.cuda_runtime_libs;
  options.per_probe_links = cmd.per_probe_links;
  options.max_workloads = cmd.max_workloads;
  options.max_libraries = cmd.max_libraries;
  options.scan_interval = std::chrono::milliseconds(cmd.scan_interval_ms);
  options.retire_after = parse_duration(cmd.retire_after);
  if (ledger && options.retire_after < 2 * std::chrono::milliseconds(cmd.ledger_interval_ms)) {
    // The ledger must read a workload's last totals before it leaves.
    options.retire_after = 2 * std::chrono::milliseconds(cmd.ledger_interval_ms);
    spdlog::warn("--retire-after {} is shorter than two ledger observations: {} ms", cmd.retire_after,
                 options.retire_after.count());
  }
  // Gone workloads are looked for every 10 s, more often for a short --retire-after.
  options.gc_interval = std::min(options.gc_interval,
                                 std::max(std::chrono::milliseconds(1000), options.retire_after / 2));
  if (!cmd.no_bpf_pins) {
    try {
      const std::string fallback = probes::default_pin_dir(true);  // mounts a bpffs when none is
      options.bpf_pin_dir = cmd.bpf_pin_dir.empty() ? fallback : cmd.bpf_pin_dir;
    } catch (const Error& e) {  // attribution works without pins; a restart then loses its state
      spdlog::error("{}: the data plane is not pinned, a restart starts it from zero", e.what());
    }
  }
  // Read before anything here touches the pins: how long they went without an agent.
  options.pins_heartbeat_age = probes::pins_heartbeat_age(options.bpf_pin_dir);
  options.orphaned_pins_after = std::chrono::duration_cast<std::chrono::seconds>(parse_duration(cmd.orphaned_pins_after));
  bpf_pin_dir = options.bpf_pin_dir;
  options.classifier.cgroup_roots = cmd.cgroup_roots;
  identity::InfrastructureOptions infrastructure;
  if (!cmd.infrastructure_namespaces.empty()) infrastructure.namespaces = cmd.infrastructure_namespaces;
  options.infrastructure = std::make_shared<identity::InfrastructureJudge>(infrastructure);
  kubernetes::TeamNamer::SlurmJobLookup slurm_job_of;
  if (slurm_jobs)
    slurm_job_of = [facts = slurm_jobs.get()](const std::string& job) {
      const auto f = facts->find(job);
      return f ? kubernetes::TeamNamer::SlurmJobNames{f->user, f->account} : kubernetes::TeamNamer::SlurmJobNames{};
    };
  options.namer = std::make_shared<kubernetes::TeamNamer>(cluster ? pods : nullptr, config.team_rule,
                                                          config.teams, std::move(slurm_job_of));
  namer = options.namer;
  device::DevicePlane* device_plane = devices.get();
  options.gpu_inventory = [device_plane] { return device::gpu_identities(device_plane->snapshot()); };
  options.gpu_processes = [device_plane] { return device::gpu_processes(device_plane->snapshot()); };
  return options;
}

// Xid errors: the monitor degrades to its self-metrics when the kernel log
// cannot be read.
void NodeAgent::Parts::start_xid_monitor(const NodeOptions& cmd, const attribution::AttributionOptions& options) {
  device::DevicePlane* device_plane = devices.get();
  device::XidMonitorOptions xid_options;
  xid_options.kmsg_path = cmd.kmsg;
  xid_options.gpu_inventory = [device_plane] { return device_plane->snapshot().gpus; };
  // An Xid without a pid: the workloads NVML sees on that GPU, else those
  // the attribution agent last saw using it with live processes.
  attribution::AttributionPlane* attribution = agent.get();
  xid_options.workloads_on_gpu = [device_plane, attribution](const device::GpuInfo& gpu) {
    auto out = device::workloads_holding_gpu(device_plane->snapshot(), gpu);
    if (!out.empty() || gpu.uuid.empty()) return out;
    for (const auto& w : attribution->snapshot().workloads)
      if (!w.processes.empty() &&
          std::any_of(w.by_gpu.begin(), w.by_gpu.end(), [&](const auto& g) { return g.uuid == gpu.uuid; }))
        out.push_back(w.workload);
    return out;
  };
  xid_options.namer = options.namer;
  xids = std::make_unique<device::XidMonitor>(xid_options);
  xids->start();
}

// /metrics and the health checks: every plane's contributor, then the server serves.
void NodeAgent::Parts::serve(const NodeOptions& cmd, const exporter::HttpServerOptions& http, const std::string& host) {
  server = std::make_unique<exporter::HttpServer>(served_content(*agent), http.web, std::move(listener));
  // The main loop feeds the ledger every --ledger-interval-ms.
  const auto allowed = std::max(std::chrono::seconds(60),
                                std::chrono::seconds(3 * (cmd.ledger_interval_ms / 1000 + 1)));
  server->add_liveness_check([this, allowed] { return exporter::loop_alive("main", main_loop.last(), allowed); });
  server->add_liveness_check([plane = agent.get()] {  // which entry points are probed, and why
    const std::string set(probes::probe_set_name(plane->probe_set()));
    return exporter::HealthStatus{true, "probe set " + set + " (" + plane->probe_set_reason() + ")"};
  });
  if (ledger) {
    server->add_contributor(ledger.get());
    // Liveness stays 200 with a degraded ledger (restarting would not mend the
    // store); the body says why.
    ledger::LedgerPlane* ledger_plane = ledger.get();
    const std::string store = cmd.store;
    server->add_liveness_check([ledger_plane, store] {
      auto s = ledger_plane->status();
      return exporter::HealthStatus{true, s.up ? "ledger writing to " + store : "ledger degraded: " + s.reason};
    });
  }
  server->add_contributor(devices.get());
  server->add_contributor(k8s_metrics.get());
  // Device counters per workload: whole on an exclusive GPU, split by
  // measured activity on a shared one.
  attribution::AttributionPlane* attribution = agent.get();
  device::DevicePlane* device_plane = devices.get();
  efficiency = std::make_unique<WorkloadEfficiencyMetrics>(
      [attribution] { return attribution->snapshot(); }, [device_plane] { return device_plane->snapshot(); });
  server->add_contributor(efficiency.get());
  if (ioctls) server->add_contributor(ioctls.get());
  if (xids) server->add_contributor(xids.get());
  if (shipper) {
    server->add_contributor(shipper.get());
    // Like the ledger's: restarting would not mend a database; the body says why.
    fleet::FleetShipper* shipping = shipper.get();
    server->add_liveness_check([shipping] {
      const auto s = shipping->status();
      return exporter::HealthStatus{true, "fleet db " + std::string(s.up ? "" : "failing: ") + s.reason + "; " +
                                              std::to_string(s.pending) + " windows pending"};
    });
    shipper->start();
  }
  main_loop.beat();  // started; run_agent's loop beats from here on
  server->serve();
  spdlog::info("gpuledger agent serving {}://{}:{}/metrics", http.web.tls ? "https" : "http", host, port);
}

NodeAgent::NodeAgent(const NodeOptions& cmd) : parts_(std::make_unique<Parts>()) {
  Parts& p = *parts_;
  auto [host, port] = exporter::parse_listen_address(cmd.listen);
  // A second agent for this node is refused before it loads a probe: two on
  // one store would double-charge, two on one port would split the scrapes.
  p.open_ledger(cmd);
  p.shipper = fleet_shipper(cmd);
  exporter::HttpServerOptions http;
  if (!cmd.web_config_file.empty()) http.web = exporter::load_web_config(cmd.web_config_file);
  p.listener = exporter::make_listener(http);
  p.port = p.listener->bind(host, port);
  p.config = cmd.config.empty() ? config::AgentConfig{} : config::load_agent_config(cmd.config);

  p.choose_allocation(cmd);
  p.devices = std::make_unique<device::DevicePlane>(device_options(cmd));
  p.devices->start();
  p.watch_kubernetes(cmd);
  const attribution::AttributionOptions options = p.attribution_options(cmd);
  if (!cmd.no_nvidia_ioctl) p.ioctls = ioctl_plane(cmd, options);
  p.agent = std::make_unique<attribution::AttributionPlane>(options);
  if (p.ledger) p.ledger->set_counter_set(p.agent->counter_set_id());
  p.agent->start();
  if (options.probe_set == probes::ProbeSet::kAuto)  // back to billing after three qualifying observations
    p.probe_set_auto = std::make_unique<ProbeSetAuto>(*p.agent, 3 * std::chrono::milliseconds(cmd.ledger_interval_ms));
  if (!cmd.no_xid) p.start_xid_monitor(cmd, options);
  if (p.k8s) p.k8s->start();
  if (p.pod_resources) p.pod_resources->start();
  if (p.slurm_gpus) p.slurm_gpus->start();
  if (p.slurm_jobs) p.slurm_jobs->start();
  p.serve(cmd, http, host);
}

NodeAgent::~NodeAgent() {
  Parts& p = *parts_;
  p.server->stop();
  if (p.shipper) p.shipper->stop();
  if (p.k8s) p.k8s->stop();
  if (p.pod_resources) p.pod_resources->stop();
  if (p.slurm_jobs) p.slurm_jobs->stop();
  if (p.slurm_gpus) p.slurm_gpus->stop();
  if (p.xids) p.xids->stop();
  p.agent->stop();
  p.devices->stop();
}

int NodeAgent::port() const { return parts_->port; }
const std::string& NodeAgent::bpf_pin_dir() const { return parts_->bpf_pin_dir; }
const std::optional<kubernetes::ClusterConfig>& NodeAgent::cluster() const { return parts_->cluster; }

void NodeAgent::observe() {
  Parts& p = *parts_;
  p.main_loop.beat();
  if (!p.ledger && !p.probe_set_auto) return;
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // One snapshot of each plane serves the probe set's judgement and the ledger.
  const device::DeviceSnapshot devices = p.devices->snapshot();
  std::optional<kubernetes::BillingAllocation> allocation;
  if (p.pod_resources) allocation = p.pod_resources->billing();
  if (!p.ledger) {
    p.probe_set_auto->judge(devices, nullptr, allocation ? &*allocation : nullptr);
    return;
  }
  const attribution::AttributionSnapshot snapshot = p.agent->snapshot();
  if (p.probe_set_auto) p.probe_set_auto->judge(devices, &snapshot, allocation ? &*allocation : nullptr);
  if (p.job_mapping || p.slurm_gpus) {  // the jobs the files or the controller name, while their cgroups run here
    const auto running = slurm::live_slurm_jobs(p.cgroup_mounts);
    std::optional<slurm::JobMapping> mapping;
    if (p.job_mapping) {
      mapping = p.job_mapping->poll();
    } else {
      std::vector<std::string> ids;
      for (const auto& [id, job] : running) ids.push_back(id);
      bool pending = false;
      mapping = p.slurm_gpus->mapping_for(ids, &pending, [&p](const std::string& job) {
        return !p.slurm_jobs || p.slurm_jobs->find(job).has_value();
      });
      if (pending) return;  // the controller's word on a new job first (slurm_gpu_holders.h)
    }
    p.ledger->observe(make_job_observation(now, snapshot, devices, mapping, running, p.namer.get(), p.prices));
    return;
  }
  if (!allocation) {  // no source (none): the users of a GPU hold it
    p.ledger->observe(make_observation(now, snapshot, devices, {}, false, p.prices));
    return;
  }
  // Through a kubelet outage: its last answer, else "allocation unknown" (allocation_outage.h).
  p.ledger->observe(make_billed_observation(now, snapshot, devices, *allocation, p.prices));
}

void NodeAgent::store_window_in_progress() {
  Parts& p = *parts_;
  if (!p.ledger) return;
  observe();
  p.ledger->store_window_in_progress();
}


// Free heap worth handing back to the system after an observation.
constexpr size_t kTrimAbove = 8 << 20;

int run_node_agent(const NodeOptions& cmd) {
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
        // hand the heap they used back instead of keeping it resident - when
        // there is that much to hand back (a trim walks and madvises the whole
        // heap: on an idle node it was a sixth of the agent's CPU).
        if (::mallinfo2().fordblks > kTrimAbove) ::malloc_trim(0);
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

}  // namespace gpuledger::node
