#pragma once
// A consistent view of everything the agent knows, handed to the exporters.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_probes.h"
#include "identity/workload.h"
#include "identity/workload_names.h"
#include "probes/library_attacher.h"
#include "probes/probe_sets.h"
#include "probes/usage.h"

namespace gpuledger::attribution {

// Switches of the probe set by {from, to, reason code}: auto's, since the start.
using ProbeSetChanges = std::map<std::tuple<std::string, std::string, std::string>, uint64_t>;

struct ProcessView {
  uint32_t pid = 0;
  std::string comm;
  uint64_t live_bytes = 0;
};

// A workload's usage on one GPU. `gpu` (the node's GPU index, as
// dcgm-exporter labels it) and `uuid` are empty when not known for sure: the
// process made no context current that the agent saw, or its device ordinal
// cannot be tied to a physical GPU (see identity/gpu_visibility.h).
struct GpuUsage {
  std::string gpu;
  std::string uuid;
  probes::Usage usage;
  // How the GPU was known (identity/gpu_evidence.h): "device" (the devices its
  // processes hold open, or NVML's process lists), "environment" (only
  // CUDA_VISIBLE_DEVICES and kin), "" when unknown.
  std::string gpu_source;
};

struct WorkloadView {
  identity::Workload workload;
  identity::WorkloadNames names;  // empty where no namer knows them
  std::vector<std::string> cgroup_paths;  // several when nested cgroups fold into one workload
  probes::Usage usage;                    // over all GPUs
  std::vector<GpuUsage> by_gpu;           // sorted by (gpu, uuid)
  std::vector<ProcessView> processes;
  // GPU infrastructure, not a tenant: the CUDA MPS control daemon and server
  // (identity/infrastructure.h). Never a holder, a user in the cost split or
  // __unallocated__ activity; its usage is shown apart.
  bool infrastructure = false;
};

struct MapUsage {
  std::string name;
  size_t entries = 0;
  size_t capacity = 0;
};

struct SelfView {
  size_t probes_attached = 0;
  size_t probe_attach_failures = 0;
  std::vector<probes::LibraryRecord> libraries;
  std::vector<probes::LibraryRecord> rejected_libraries;
  std::vector<probes::LibraryRecord> runtime_libraries;  // files whose CUDA runtime is probed
  uint64_t runtime_libraries_detached = 0;         // like libraries_detached, for runtime files
  uint64_t runtime_library_limit_rejections = 0;   // runtime files refused at the bound (--max-libraries)
  size_t runtime_libraries_incomplete = 0;         // attached in part, attach retries spent
  size_t runtime_libraries_stripped = 0;           // static runtimes stripped of symbols: found, not probed
  uint64_t runtime_bypass_processes = 0;  // processes seen reaching the driver around its exported symbols
  uint64_t gpu_identity_disagreements = 0;  // (workload, ordinal)s whose environment named another GPU than the device side
  uint64_t evidence_scans_truncated = 0;  // descriptor scans stopped at kMaxFdsExamined (identity/gpu_evidence.h)
  std::vector<MapUsage> maps;
  std::array<uint64_t, GL_STAT_COUNT> kernel_stats{};
  uint64_t library_events_dropped = 0;
  size_t files_judged_not_driver = 0;  // mapped executable files read and found not to be the driver
  uint64_t libraries_detached = 0;       // unmapped and deleted: probes and descriptor released
  uint64_t library_limit_rejections = 0;  // driver copies refused at the bound (--max-libraries)
  size_t libraries_incomplete = 0;  // attached in part, attach retries spent
  bool library_watcher = false;  // event-driven discovery is on
  uint64_t workloads_retired = 0;
  // Exit records dropped at their bound before their time (exited_processes.h).
  uint64_t exited_process_records_evicted = 0;
  size_t workloads_known = 0;  // cgroup keys the directory names: live, or gone for less than --retire-after
  probes::PinReport pins;  // the data plane's pins in bpffs (enabled false: none)
  probes::ProbeSet probe_set = probes::ProbeSet::kFull;  // in force: billing or full
  std::string probe_set_reason;  // why that one, in words
  ProbeSetChanges probe_set_changes;  // auto's switches to date
  // Whether the launch, copy, memset and sync counters mean anything: under
  // billing nothing feeds them, and they are left out rather than shown as 0.
  bool hot_path_probed() const { return probe_set == probes::ProbeSet::kFull; }
};

// Who a process not in any view's processes belonged to, over the time it
// ran (Unix microseconds), so that NVML's samples of it find their owner
// (node/process_owners.h): a CUDA process that exited lately (from the
// probes' exit event), or a live process NVML lists that the probes never saw
// (from /proc/PID/cgroup).
struct ProcessOwner {
  uint32_t pid = 0;
  std::string account;  // workload id
  bool infrastructure = false;  // the MPS daemons: nobody's bill
  uint64_t from_us = 0;   // started (0: unknown)
  uint64_t until_us = 0;  // exited (0: still running)
};

struct AttributionSnapshot {
  std::vector<WorkloadView> workloads;  // sorted by workload id
  // Owners of processes the views do not list (bounded: exited_processes.h).
  std::vector<ProcessOwner> other_processes;
  SelfView self;
};

}  // namespace gpuledger::attribution
