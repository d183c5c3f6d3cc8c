#pragma once
// The node agent: loads the probes, keeps every libcuda on the node covered,
// names the workloads behind the kernel's counters, and hands out snapshots.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "attribution/exited_processes.h"
#include "attribution/map_full_log.h"
#include "attribution/runtime_discovery_worker.h"
#include "attribution/snapshot.h"
#include "identity/cgroup_fs.h"
#include "identity/gpu_evidence.h"
#include "identity/gpu_visibility.h"
#include "identity/infrastructure.h"
#include "identity/workload_classifier.h"
#include "identity/workload_directory.h"
#include "identity/workload_names.h"
#include "lib_discovery.h"
#include "probes/bpf_handles.h"
#include "probes/cuda_probe_program.h"
#include "probes/library_attacher.h"
#include "probes/library_discovery.h"
#include "probes/open_spans.h"
#include "probes/pin_store.h"
#include "probes/probe_sets.h"
#include "probes/runtime_attacher.h"
#include "probes/runtime_entry_points.h"
#include "probes/usage_totals.h"

namespace gpuledger::attribution {

// What /healthz says of auto before the node is judged.
inline constexpr std::string_view kAutoNotJudgedYet =
    "auto: full until the node's GPUs are judged (whether NVML splits each one itself)";

struct AttributionOptions {
  std::vector<std::string> cuda_libs;     // --cuda-lib, attached first
  bool discover = true;                   // host paths, opens, process maps
  bool launch_returns = false;            // count launches at return (errors too)
  // Which entry points are probed (probes/probe_sets.h). auto: full, until
  // the device side can be asked whether it splits every GPU itself.
  probes::ProbeSet probe_set = probes::ProbeSet::kFull;
  // Stop the first process to map a never-seen libcuda copy until its probes
  // are in place (no first-call loss); see docs/reliability.md.
  bool hold_new_drivers = true;
  // CUDA runtime probes (docs/runtime-probes.md): auto counts at the runtime
  // level only the calls the driver-level probes missed.
  probes::RuntimeProbes runtime_probes = probes::RuntimeProbes::kAuto;
  std::vector<std::string> runtime_libs;  // --cuda-runtime-lib: files holding the runtime, probed first
  uint32_t max_workloads = 16384;
  size_t max_libraries = probes::LibraryAttacher::kDefaultMaxLibraries;  // driver files probed at once, runtime files apart
  bool per_probe_links = false;           // see ProbeProgramConfig
  std::string v1_controller = "memory";   // fallback hierarchy on cgroup v1 hosts
  std::chrono::milliseconds scan_interval{5000};  // backstop scan of process maps
  std::chrono::milliseconds gc_interval{10000};
  // How long a workload whose cgroup is gone stays in snapshots (/metrics,
  // /api/v1/workloads) after its last reading; the ledger has its totals.
  std::chrono::milliseconds retire_after{std::chrono::minutes(10)};
  std::string proc_root = "/proc";
  // Where the data plane is pinned in bpffs so it outlives the agent
  // (--bpf-pin-dir; probes/pin_store.h); empty: nothing is pinned.
  std::string bpf_pin_dir;
  // The pins' heartbeat found at start (probes/pin_heartbeat.h), read before
  // anything touched them; none: nothing was pinned. Older than
  // orphaned_pins_after: said in the log and /metrics.
  std::optional<std::chrono::seconds> pins_heartbeat_age;
  std::chrono::seconds orphaned_pins_after{std::chrono::hours(24)};
  // Where pods, Slurm jobs and containers may be recognised besides the top
  // of the cgroup hierarchy (--cgroup-root).
  identity::ClassifierOptions classifier;
  // Names workloads (Kubernetes metadata, team rules); none leaves names empty.
  std::shared_ptr<const identity::WorkloadNamer> namer;
  // Tells GPU infrastructure (the MPS server) from tenants; none: all tenants.
  std::shared_ptr<const identity::InfrastructureJudge> infrastructure;
  // The node's GPUs (from the device plane); none means GPUs stay unnamed
  // unless a process names them by UUID itself.
  std::function<std::vector<identity::GpuIdentity>()> gpu_inventory;
  // Host pid -> the GPUs (UUIDs) NVML's process lists show it on; none: only
  // the device files a process holds open tell its GPU from the device side
  // (identity/gpu_evidence.h).
  std::function<std::map<uint32_t, std::set<std::string>>()> gpu_processes;
};

class AttributionPlane : public probes::CallNameLookup {
 public:
  explicit AttributionPlane(AttributionOptions options);  // throws Error when BPF cannot be loaded
  ~AttributionPlane() override;
  AttributionPlane(const AttributionPlane&) = delete;
  AttributionPlane& operator=(const AttributionPlane&) = delete;

  void start();
  void stop();
  AttributionSnapshot snapshot();
  // For /healthz and /readyz: cheap, takes no map lock.
  struct Health {
    std::optional<std::chrono::steady_clock::time_point> last_loop;  // none: the loop never turned
    bool map_read = false;       // the counter maps were read at least once
    size_t probes_attached = 0;
  };
  Health health() const;
  std::string call_name(uint32_t call_id) const override;
  // The probe set in force: billing or full (auto resolved), and why.
  probes::ProbeSet probe_set() const;
  std::string probe_set_reason() const;
  // auto's switch (node/probe_set_judge.h): attaches or detaches the hot
  // path's probes on every probed file, counts the change under
  // `reason_code` (a label value) and logs `reason`. No count already made is
  // lost; under billing the launches, copies and waits are no longer seen.
  void set_probe_set(probes::ProbeSet set, const std::string& reason_code, const std::string& reason);
  // The identity of the kernel counters read (the ledger's baseline is only
  // used against the same ones): the boot and the id of the pinned workload
  // counter map; empty without pins (the counters die with the agent).
  std::string counter_set_id() const;

 private:
  void run();
  void handle_event(const void* data, size_t size);
  void handle_library_map(const struct gl_lib_map_event& ev);
  void release_held(uint32_t pid);  // SIGCONT to a process the watcher stopped
  bool judge_infrastructure(const WorkloadView& view);
  bool infrastructure_verdict(const std::string& workload_id);  // the last one; false when none
  // A CUDA process's exit, kept with its owner (exited_processes.h).
  void record_exit(const gl_proc_event& ev);
  // The owners of live processes NVML lists that the probes never saw, from
  // /proc/PID/cgroup (at most kMaxUnprobedReads a snapshot).
  static constexpr size_t kMaxUnprobedReads = 1024;
  void add_unprobed_gpu_processes(const std::map<uint32_t, gl_proc_state>& processes, std::vector<ProcessOwner>& out);
  void learn_gpu_view(uint32_t pid, uint64_t cgroup_key);
  struct GpuLabels {
    std::string gpu, uuid, source;  // source: identity::GpuChoice::source
    auto operator<=>(const GpuLabels&) const = default;
  };
  GpuLabels gpu_labels(const probes::CounterKey& key, const std::vector<identity::GpuIdentity>& inventory);
  GpuLabels unknown_device_labels(const probes::CounterKey& key, const std::vector<identity::GpuIdentity>& inventory);
  // What the device side says of each live CUDA process's workload: the GPUs
  // it holds open (/proc/PID/fd) or NVML lists it on, accumulated per cgroup.
  void learn_held_gpus(const std::map<uint32_t, gl_proc_state>& processes,
                       const std::vector<identity::GpuIdentity>& inventory,
                       const std::map<probes::CounterKey, probes::Usage>& totals);
  void refresh_locked();
  void retire_gone_workloads();
  // Drops from the totals the workloads gone for longer than retire_after.
  void forget_retired_workloads(std::chrono::steady_clock::time_point now);
  // Offers every file a running process maps for execution (the backstop
  // behind the watcher, and what finds processes older than the agent).
  void scan_for_libraries();
  // After a takeover of pinned maps: what only userspace knew, read again from
  // the live processes the kernel side remembers (their view of the GPUs).
  void relearn_live_processes();
  // Says so when the pins found at start had had no agent for too long.
  void report_orphaned_pins();

  AttributionOptions options_;
  mutable std::mutex probe_set_mu_;
  probes::ProbeSet active_set_ = probes::ProbeSet::kFull;
  std::string probe_set_reason_;
  ProbeSetChanges probe_set_changes_;
  identity::CgroupMounts mounts_;
  std::unique_ptr<probes::PinStore> pins_;  // none without --bpf-pin-dir; outlives the program
  std::unique_ptr<probes::CudaProbeProgram> program_;
  std::unique_ptr<probes::LibOpenWatcher> watcher_;
  std::unique_ptr<probes::LibraryAttacher> attacher_;
  std::unique_ptr<probes::RuntimeAttacher> runtime_;  // none with --runtime-probes off
  std::unique_ptr<RuntimeDiscoveryWorker> runtime_worker_;  // declared after what it uses: stopped first
  std::atomic<uint64_t> runtime_bypass_processes_{0};
  // The last verdict per workload id, kept while it has no live process.
  std::mutex infrastructure_mu_;
  std::map<std::string, bool> infrastructure_;
  ExitedProcesses exited_;
  probes::RingBufferHandle events_;
  identity::WorkloadDirectory directory_;
  probes::UsageTotals totals_;
  probes::BusyToDate busy_to_date_;  // open spans counted to date (probes/open_spans.h)
  std::mutex refresh_mu_;  // a map reading and the deletes that follow it are one step
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> workloads_retired_{0};
  std::atomic<int64_t> loop_beat_ns_{0};  // steady_clock of the loop's last turn; 0: never
  std::atomic<bool> map_read_{false};
  int64_t pins_orphaned_seconds_ = 0;  // set in the constructor
  std::unique_ptr<MapFullLog> map_full_log_;  // the constructor, then the loop's thread only
  std::mutex views_mu_;
  // What the latest process of each workload said about its visible GPUs.
  std::map<uint64_t, identity::ProcessGpuView> gpu_views_;
  std::map<probes::CounterKey, GpuLabels> gpu_labels_;  // once known from the device side
  std::map<uint64_t, std::set<std::string>> held_gpus_;  // by cgroup key: UUIDs seen held
  std::set<probes::CounterKey> disagreed_;               // environment vs device, logged and counted once
  std::atomic<uint64_t> gpu_disagreements_{0};
  // Where each process's descriptor scan goes on (identity::FdScanCursor):
  // a padded table is read over several snapshots, never starved.
  struct FdScan {
    identity::FdScanCursor cursor;
    bool logged = false;  // its table was past the bound: said once
  };
  std::mutex fd_scans_mu_;
  std::map<uint32_t, FdScan> fd_scans_;  // by pid, for the processes of unsettled workloads
  std::atomic<uint64_t> evidence_scans_truncated_{0};
  // Workloads whose cgroup is gone, by key: when their last reading was taken.
  std::map<uint64_t, std::chrono::steady_clock::time_point> gone_since_;  // the loop's thread only
  std::thread thread_;
};

}  // namespace gpuledger::attribution
