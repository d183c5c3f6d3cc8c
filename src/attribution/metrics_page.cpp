#include "attribution/metrics_page.h"

#include <array>
#include <functional>

#include "metrics/prometheus_text.h"

namespace gpuledger::attribution {

using metrics::ExpositionWriter;
using metrics::Labels;
using metrics::MetricType;
namespace {

using attribution::WorkloadView;

// The workload labels every attribution series carries. namespace, pod,
// container and team come from the configured namer (Kubernetes metadata, team
// rules) and are empty where none knows them: the labels always exist, so
// queries and joins written against them keep working.
Labels workload_labels(const WorkloadView& w) {
  return {{"workload", w.workload.id},
          {"pod_uid", w.workload.pod_uid},
          {"container_id", w.workload.container_id},
          {"namespace", w.names.namespace_name},
          {"pod", w.names.pod},
          {"container", w.names.container},
          {"team", w.names.team}};
}

// One series set per workload and GPU: the unit every attribution series is
// labelled with. A view with no per-GPU breakdown is one entry, GPU unknown.
struct Series {
  Labels labels;
  const probes::Usage* usage;
};

std::vector<Series> attribution_series(const attribution::AttributionSnapshot& snap) {
  std::vector<Series> out;
  for (const auto& w : snap.workloads) {
    auto add = [&](const std::string& gpu, const std::string& uuid, const probes::Usage& usage) {
      Labels labels = workload_labels(w);
      labels.emplace_back("gpu", gpu);
      labels.emplace_back("UUID", uuid);
      out.push_back({std::move(labels), &usage});
    };
    if (w.by_gpu.empty()) add("", "", w.usage);
    for (const auto& g : w.by_gpu) add(g.gpu, g.uuid, g.usage);
  }
  return out;
}

struct CounterFamily {
  const char* name;
  MetricType type;
  const char* help;
  std::function<uint64_t(const probes::Usage&)> value;
  bool hot = false;  // fed by hot-path probes only: no series under the billing probe set
};

const std::vector<CounterFamily>& plain_families() {
  static const std::vector<CounterFamily> families = {
      {"gpuledger_cuda_kernel_launches_total", MetricType::kCounter,
       "CUDA kernel launches (cuLaunchKernel, _ptsz, Ex, cooperative, multi-device, and the legacy cuLaunch, "
       "cuLaunchGrid and cuLaunchGridAsync).",
       [](const probes::Usage& u) { return u.counters.launches; }, true},
      {"gpuledger_cuda_launched_threads_total", MetricType::kCounter,
       "Threads launched: grid size times block size, summed over launches.",
       [](const probes::Usage& u) { return u.counters.launched_threads; }, true},
      {"gpuledger_cuda_graph_launches_total", MetricType::kCounter, "CUDA graph launches.",
       [](const probes::Usage& u) { return u.counters.graph_launches; }, true},
      {"gpuledger_cuda_memory_allocations_total", MetricType::kCounter, "Successful device memory allocations.",
       [](const probes::Usage& u) { return u.counters.allocations; }},
      {"gpuledger_cuda_memory_allocated_bytes_total", MetricType::kCounter, "Bytes of device memory allocated.",
       [](const probes::Usage& u) { return u.counters.allocated_bytes; }},
      {"gpuledger_cuda_memory_freed_bytes_total", MetricType::kCounter,
       "Bytes of device memory freed, including what a process held when it exited.",
       [](const probes::Usage& u) { return u.counters.freed_bytes; }},
      {"gpuledger_cuda_memory_live_bytes", MetricType::kGauge,
       "Device memory allocated and not yet freed (allocations seen by the agent).",
       [](const probes::Usage& u) { return u.live_bytes(); }},
      {"gpuledger_cuda_memory_untracked_frees_total", MetricType::kCounter,
       "Frees of allocations made before the agent attached (their size is unknown).",
       [](const probes::Usage& u) { return u.counters.untracked_frees; }},
      {"gpuledger_cuda_memsets_total", MetricType::kCounter, "Successful memsets of device memory (cuMemsetD*).",
       [](const probes::Usage& u) { return u.counters.memsets; }, true},
      {"gpuledger_cuda_memset_bytes_total", MetricType::kCounter,
       "Bytes of device memory set by memsets: elements times element size.",
       [](const probes::Usage& u) { return u.counters.memset_bytes; }, true},
      {"gpuledger_cuda_syncs_total", MetricType::kCounter,
       "Synchronisation calls (stream, context, event) that returned.",
       [](const probes::Usage& u) { return u.counters.syncs; }, true},
  };
  return families;
}

constexpr std::array<const char*, GL_DIR_COUNT> kDirections = {"htod", "dtoh", "dtod", "peer", "unknown"};

void write_workload_metrics(ExpositionWriter& out, const attribution::AttributionSnapshot& snap) {
  const auto series = attribution_series(snap);
  // Under the billing probe set the hot-path families keep their HELP and
  // TYPE but have no series: absent, not 0 (docs/probe-sets.md).
  const std::vector<Series> none;
  const auto& hot_series = snap.self.hot_path_probed() ? series : none;
  for (const auto& family : plain_families()) {
    out.family(family.name, family.type, family.help);
    for (const auto& s : family.hot ? hot_series : series) out.sample(s.labels, family.value(*s.usage));
  }
  out.family("gpuledger_cuda_sync_seconds_total", MetricType::kCounter,
             "Seconds spent blocked in synchronisation calls.");
  for (const auto& s : hot_series) out.sample(s.labels, s.usage->counters.sync_ns / 1e9);
  out.family("gpuledger_cuda_busy_seconds_total", MetricType::kCounter,
             "Estimated GPU-busy seconds: from the first launch after a synchronisation until a "
             "synchronisation on the same thread returns. An estimate from the API, not a device counter.");
  for (const auto& s : hot_series) out.sample(s.labels, s.usage->counters.busy_ns / 1e9);

  auto per_direction = [&](const char* name, const char* help, auto field) {
    out.family(name, MetricType::kCounter, help);
    for (const auto& s : hot_series) {
      for (size_t d = 0; d < GL_DIR_COUNT; ++d) {
        auto labels = s.labels;
        labels.emplace_back("direction", kDirections[d]);
        out.sample(labels, (s.usage->counters.*field)[d]);
      }
    }
  };
  per_direction("gpuledger_cuda_memcpy_bytes_total", "Bytes copied by memcpy, by direction.", &gl_counters::memcpy_bytes);
  per_direction("gpuledger_cuda_memcpy_total", "Memcpy calls, by direction.", &gl_counters::memcpy_calls);

  // Counts kept by name per series (errors by entry point, export tables by id).
  auto by_name = [&](const char* name, const char* help, const char* label,
                     std::map<std::string, uint64_t> probes::Usage::*field) {
    out.family(name, MetricType::kCounter, help);
    for (const auto& s : series) {
      for (const auto& [key, n] : s.usage->*field) {
        auto labels = s.labels;
        labels.emplace_back(label, key);
        out.sample(labels, n);
      }
    }
  };
  by_name("gpuledger_cuda_api_errors_total", "CUDA driver calls that returned an error, by entry point.", "call",
          &probes::Usage::errors_by_call);
  by_name("gpuledger_cuda_export_table_requests_total",
          "cuGetExportTable requests, by table id: the undocumented driver tables a CUDA runtime asks for.", "table",
          &probes::Usage::export_tables);
  out.family("gpuledger_workload_processes", MetricType::kGauge, "Live processes of the workload seen making CUDA calls.");
  for (const auto& w : snap.workloads) out.sample(workload_labels(w), static_cast<uint64_t>(w.processes.size()));
  out.family("gpuledger_workload_gpu_info", MetricType::kGauge,
             "How the GPU of each workload's attribution series was known (gpu_source): device (the device files "
             "its processes hold open, or NVML's process lists) or environment (CUDA_VISIBLE_DEVICES and kin only).");
  for (const auto& w : snap.workloads)
    for (const auto& g : w.by_gpu) {
      if (g.uuid.empty()) continue;
      Labels labels = workload_labels(w);
      labels.insert(labels.end(), {{"gpu", g.gpu}, {"UUID", g.uuid}, {"gpu_source", g.gpu_source}});
      out.sample(labels, uint64_t{1});
    }
}

// The data plane's pins (--bpf-pin-dir): whether this agent took them over
// from an earlier one, and why it had to replace what it found.
void write_pin_metrics(ExpositionWriter& out, const probes::PinReport& pins) {
  out.family("gpuledger_bpf_pins_adopted", MetricType::kGauge,
             "1 when this agent took over the BPF maps an earlier agent pinned (counters, contexts and live "
             "allocations survived the restart), 0 when it started them anew.");
  out.sample({}, uint64_t{pins.adopted ? 1u : 0u});
  out.family("gpuledger_bpf_pins_replaced", MetricType::kGauge,
             "1, with the reason, when pins found at start could not be taken over and were replaced "
             "(layout_version, map_missing, map_mismatch, pin_corrupt: counters started from zero; "
             "programs_changed: the maps were kept, the probes attached anew).");
  if (!pins.replaced.empty()) out.sample({{"reason", pins.replaced}}, uint64_t{1});
  out.family("gpuledger_bpf_pinned_libraries_adopted", MetricType::kGauge,
             "Driver files whose pinned probes this agent took over at start (they stayed attached while no agent ran).");
  out.sample({}, static_cast<uint64_t>(pins.libraries_adopted));
  out.family("gpuledger_bpf_pins_orphaned_seconds", MetricType::kGauge,
             "How long the pins this agent found at start had gone without an agent (their last heartbeat), when "
             "that was longer than --orphaned-pins-after: their probes trapped every CUDA call on the node and "
             "nobody read them. 0 when the pins were fresh or none were found.");
  out.sample({}, static_cast<uint64_t>(pins.orphaned_seconds));
  out.family("gpuledger_bpf_pin_layout_info", MetricType::kGauge,
             "The bpffs directory the data plane is pinned in, and its layout version.");
  out.sample({{"dir", pins.root}, {"layout", pins.layout}}, uint64_t{1});
}

void write_self_metrics(ExpositionWriter& out, const attribution::AttributionSnapshot& snap, double last_scrape_seconds) {
  const auto& self = snap.self;
  out.family("gpuledger_probes_attached", MetricType::kGauge, "Uprobes attached to CUDA driver libraries.");
  out.sample({}, static_cast<uint64_t>(self.probes_attached));
  out.family("gpuledger_probe_set", MetricType::kGauge,
             "1 for the probe set in force (--probe-set; auto resolves to one of these), 0 for the other: "
             "billing probes no launch, copy, memset or synchronisation (docs/probe-sets.md).");
  for (auto set : {probes::ProbeSet::kBilling, probes::ProbeSet::kFull})
    out.sample({{"set", std::string(probes::probe_set_name(set))}}, uint64_t{self.probe_set == set ? 1u : 0u});
  out.family("gpuledger_probe_set_changes_total", MetricType::kCounter,
             "Switches of the probe set under --probe-set auto, by the set left, the set taken and why (a code: "
             "docs/probe-sets.md).");
  for (const auto& [key, n] : self.probe_set_changes) {
    const auto& [from, to, reason] = key;
    out.sample({{"from", from}, {"to", to}, {"reason", reason}}, n);
  }
  out.family("gpuledger_probe_attach_failures", MetricType::kGauge, "Uprobes that could not be attached.");
  out.sample({}, static_cast<uint64_t>(self.probe_attach_failures));
  out.family("gpuledger_cuda_libraries_attached", MetricType::kGauge,
             "Distinct CUDA driver library files (device and inode) with probes attached.");
  out.sample({}, static_cast<uint64_t>(self.libraries.size()));
  out.family("gpuledger_cuda_library_info", MetricType::kGauge, "One series per attached CUDA driver library.");
  for (const auto& lib : self.libraries)
    out.sample({{"path", lib.path}, {"origin", lib.origin}, {"inode", std::to_string(lib.file.ino)}}, uint64_t{1});
  out.family("gpuledger_cuda_libraries_rejected", MetricType::kGauge,
             "Library paths offered or found that could not be attached (see the log and /api/v1/workloads).");
  out.sample({}, static_cast<uint64_t>(self.rejected_libraries.size()));
  out.family("gpuledger_cuda_libraries_incomplete", MetricType::kGauge,
             "Driver files whose probes attached only in part and stayed so after every attach retry (see the log).");
  out.sample({}, static_cast<uint64_t>(self.libraries_incomplete));
  out.family("gpuledger_cuda_libraries_detached_total", MetricType::kCounter,
             "Driver files detached because no process maps them any more and they were deleted.");
  out.sample({}, self.libraries_detached);
  out.family("gpuledger_cuda_library_limit_rejections_total", MetricType::kCounter,
             "Driver files not probed because --max-libraries files were probed already.");
  out.sample({}, self.library_limit_rejections);
  out.family("gpuledger_library_files_judged", MetricType::kGauge,
             "Executable files mapped on the node that were read and found not to export the CUDA driver API "
             "(remembered by inode so each is read once).");
  out.sample({}, static_cast<uint64_t>(self.files_judged_not_driver));
  out.family("gpuledger_runtime_libraries_attached", MetricType::kGauge,
             "Distinct files holding the CUDA runtime (shared libcudart, or programs linking it statically) "
             "with runtime probes attached (--runtime-probes).");
  out.sample({}, static_cast<uint64_t>(self.runtime_libraries.size()));
  out.family("gpuledger_runtime_libraries_incomplete", MetricType::kGauge,
             "Runtime files whose probes attached only in part and stayed so after every attach retry (see the log).");
  out.sample({}, static_cast<uint64_t>(self.runtime_libraries_incomplete));
  out.family("gpuledger_runtime_libraries_unprobed", MetricType::kGauge,
             "Files holding a CUDA runtime the runtime probes cannot attach to, by why (stripped: a statically "
             "linked runtime without its symbol table).");
  out.sample({{"reason", "stripped"}}, static_cast<uint64_t>(self.runtime_libraries_stripped));
  out.family("gpuledger_runtime_libraries_detached_total", MetricType::kCounter,
             "Runtime files detached because no process maps them any more and they were deleted.");
  out.sample({}, self.runtime_libraries_detached);
  out.family("gpuledger_runtime_library_limit_rejections_total", MetricType::kCounter,
             "Runtime files not probed because --max-libraries runtime files were probed already.");
  out.sample({}, self.runtime_library_limit_rejections);
  out.family("gpuledger_runtime_probe_calls_total", MetricType::kCounter,
             "CUDA runtime calls seen by the runtime probes, by which level counted them (counted here: "
             "runtime; de-duplicated: driver).");
  out.sample({{"counted_by", "runtime"}}, self.kernel_stats[GL_STAT_RUNTIME_COUNTED]);
  out.sample({{"counted_by", "driver"}}, self.kernel_stats[GL_STAT_RUNTIME_LEFT_TO_DRIVER]);
  out.family("gpuledger_runtime_bypass_processes_total", MetricType::kCounter,
             "Processes whose CUDA runtime reached the driver around its exported symbols (a runtime call "
             "no driver probe saw): their runtime calls are counted by the runtime probes.");
  out.sample({}, self.runtime_bypass_processes);
  out.family("gpuledger_gpu_identity_disagreements_total", MetricType::kCounter,
             "Workload device ordinals whose environment (CUDA_VISIBLE_DEVICES) named another GPU than the devices "
             "their processes hold open or NVML lists them on; the device side wins (each logged once).");
  out.sample({}, self.gpu_identity_disagreements);
  out.family("gpuledger_evidence_scan_truncated_total", MetricType::kCounter,
             "Scans of a process's open descriptors for GPU device files that stopped at the bound (65536 per "
             "snapshot); the next snapshot goes on where it stopped, so a padded table delays, never hides, a device "
             "(each process logged once).");
  out.sample({}, self.evidence_scans_truncated);
  out.family("gpuledger_library_watcher_enabled", MetricType::kGauge,
             "1 when libraries are discovered as they are mapped for execution, 0 when only the periodic scan runs.");
  out.sample({}, uint64_t{self.library_watcher ? 1u : 0u});

  out.family("gpuledger_bpf_map_entries", MetricType::kGauge, "Entries in use in a BPF map.");
  for (const auto& m : self.maps) out.sample({{"map", m.name}}, static_cast<uint64_t>(m.entries));
  out.family("gpuledger_bpf_map_capacity", MetricType::kGauge, "Capacity of a BPF map.");
  for (const auto& m : self.maps) out.sample({{"map", m.name}}, static_cast<uint64_t>(m.capacity));

  out.family("gpuledger_events_dropped_total", MetricType::kCounter,
             "Kernel-to-agent events lost because a ring buffer was full.");
  out.sample({{"source", "probes"}}, self.kernel_stats[GL_STAT_EVENTS_DROPPED]);
  out.sample({{"source", "library_watcher"}}, self.library_events_dropped);
  out.family("gpuledger_bpf_overflow_total", MetricType::kCounter,
             "Kernel-side degradations: a full map or a return seen without its entry.");
  out.sample({{"reason", "workload_map_full"}}, self.kernel_stats[GL_STAT_WORKLOADS_FULL]);
  out.sample({{"reason", "workload_entry_allocation_failed"}}, self.kernel_stats[GL_STAT_WORKLOADS_NOMEM]);
  out.sample({{"reason", "thread_map_full"}}, self.kernel_stats[GL_STAT_THREADS_FULL]);
  out.sample({{"reason", "allocation_map_full"}}, self.kernel_stats[GL_STAT_ALLOCS_UNTRACKED]);
  out.sample({{"reason", "process_map_full"}}, self.kernel_stats[GL_STAT_PROCS_FULL]);
  out.sample({{"reason", "return_without_entry"}}, self.kernel_stats[GL_STAT_STASH_MISSING]);
  out.sample({{"reason", "export_table_map_full"}}, self.kernel_stats[GL_STAT_EXPORT_TABLES_FULL]);
  out.sample({{"reason", "span_map_full"}}, self.kernel_stats[GL_STAT_SPANS_FULL]);
  out.sample({{"reason", "span_streams_full"}}, self.kernel_stats[GL_STAT_SPAN_STREAMS_FULL]);
  out.family("gpuledger_probe_errors_after_failed_init_total", MetricType::kCounter,
             "Failed CUDA calls of processes whose cuInit had failed: the same failure again, counted once as "
             "the cuInit error in gpuledger_cuda_api_errors_total and here apart.");
  out.sample({}, self.kernel_stats[GL_STAT_FAILED_AFTER_INIT_FAILED]);
  out.family("gpuledger_probe_arrays_of_unknown_size_total", MetricType::kCounter,
             "CUDA arrays of a format whose element size the probes do not know: counted as allocations of 0 bytes.");
  out.sample({}, self.kernel_stats[GL_STAT_ARRAY_SIZE_UNKNOWN]);
  out.family("gpuledger_workloads_retired_total", MetricType::kCounter,
             "Workloads whose cgroup was removed: their kernel entries are read a last time and dropped, and they leave "
             "/metrics and /api/v1/workloads after --retire-after (the ledger keeps their totals).");
  out.sample({}, self.workloads_retired);
  out.family("gpuledger_exited_process_records_evicted_total", MetricType::kCounter,
             "Records of exited CUDA processes (pid, workload, lifetime) dropped at their bound of 16384 before their "
             "10 minutes: NVML time of those processes found later is billed to __unattributed__.");
  out.sample({}, self.exited_process_records_evicted);
  out.family("gpuledger_workload_directory_entries", MetricType::kGauge,
             "Cgroups the agent holds a name for: live workloads and those gone for less than --retire-after. "
             "Follows the live workloads, not history.");
  out.sample({}, static_cast<uint64_t>(self.workloads_known));
  if (self.pins.enabled) write_pin_metrics(out, self.pins);
  out.family("gpuledger_scrape_duration_seconds", MetricType::kGauge, "Time taken to produce the previous scrape.");
  out.sample({}, last_scrape_seconds);
}

}  // namespace

std::string render_metrics(const attribution::AttributionSnapshot& snapshot, double last_scrape_seconds) {
  ExpositionWriter out;
  write_workload_metrics(out, snapshot);
  write_self_metrics(out, snapshot, last_scrape_seconds);
  return out.text();
}

}  // namespace gpuledger::attribution
