#include "node/workload_efficiency.h"

#include <algorithm>
#include <exception>
#include <set>

#include "common/counter_delta.h"
#include "common/log.h"

namespace gpuledger::node {

std::string_view efficiency_source_name(EfficiencySource source) {
  switch (source) {
    case EfficiencySource::kDevice: return "device";
    case EfficiencySource::kNvml: return "nvml";
    case EfficiencySource::kApportioned: return "apportioned";
  }
  return "unknown";
}

const std::array<EfficiencyFieldInfo, kEfficiencyFieldCount>& efficiency_fields() {
  static const std::array<EfficiencyFieldInfo, kEfficiencyFieldCount> fields{{
      {EfficiencyField::kSmActiveRatio, device::DeviceField::kSmActiveRatio, "gpuledger_workload_sm_active_ratio",
       "The workload's part of its GPU's SM active ratio (DCGM_FI_PROF_SM_ACTIVE): the device value on a GPU it "
       "had to itself (source=device), else split by its share of the SM activity on that GPU (source=nvml: NVML "
       "per-process SM samples; source=apportioned: eBPF busy time, else launches). Parts add up to the device value."},
      {EfficiencyField::kSmOccupancyRatio, device::DeviceField::kSmOccupancyRatio, "gpuledger_workload_sm_occupancy_ratio",
       "The workload's part of its GPU's SM occupancy ratio (DCGM_FI_PROF_SM_OCCUPANCY), obtained as the source "
       "label says (device, nvml, apportioned)."},
      {EfficiencyField::kTensorActiveRatio, device::DeviceField::kTensorActiveRatio, "gpuledger_workload_tensor_active_ratio",
       "The workload's part of its GPU's tensor pipe active ratio (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE), obtained as the "
       "source label says (device, nvml, apportioned)."},
      {EfficiencyField::kDramActiveRatio, device::DeviceField::kDramActiveRatio, "gpuledger_workload_dram_active_ratio",
       "The workload's part of its GPU's DRAM active ratio (DCGM_FI_PROF_DRAM_ACTIVE), obtained as the source label "
       "says (device, nvml, apportioned)."},
      {EfficiencyField::kGpuMemoryUsedBytes, device::DeviceField::kMemoryUsedBytes, "gpuledger_workload_gpu_memory_used_bytes",
       "Device memory the workload uses on the GPU: the sum over its processes from NVML (source=nvml), or the "
       "device's memory used on a GPU it had to itself (source=device)."},
  }};
  return fields;
}

ActivityBaseline ActivityBaseline::of(const attribution::AttributionSnapshot& snapshot) {
  ActivityBaseline b;
  for (const auto& w : snapshot.workloads) {
    for (const auto& g : w.by_gpu) {
      if (g.uuid.empty()) continue;
      auto& c = b.counters[{w.workload.id, g.uuid}];
      c.busy_ns += g.usage.counters.busy_ns;
      c.launches += g.usage.counters.launches;
    }
  }
  return b;
}

namespace {

constexpr std::array<EfficiencyField, 4> kRatioFields = {EfficiencyField::kSmActiveRatio,
                                                        EfficiencyField::kSmOccupancyRatio,
                                                        EfficiencyField::kTensorActiveRatio,
                                                        EfficiencyField::kDramActiveRatio};

// Whether `r` is a reading of exactly the device `uuid` names.
bool reading_matches(const device::DeviceReading& r, const std::string& uuid) {
  if (r.uuid != uuid) return false;
  return r.gpu_instance_id.empty() || uuid.rfind("MIG-", 0) == 0;
}

// A workload's by_gpu entries for one UUID, folded.
struct OnGpu {
  size_t workload = 0;
  std::string gpu;
  uint64_t busy_delta = 0;
  uint64_t launch_delta = 0;
  bool active() const { return busy_delta > 0 || launch_delta > 0; }
};

std::string index_label(const std::optional<unsigned>& i) { return i ? std::to_string(*i) : std::string(); }

using Workloads = std::vector<attribution::WorkloadView>;

// Who is on which GPU by eBPF (by uuid), with the interval's deltas.
std::map<std::string, std::vector<OnGpu>> ebpf_on_gpu(const Workloads& workloads, const ActivityBaseline& current,
                                                      const ActivityBaseline* previous) {
  std::map<std::string, std::vector<OnGpu>> on_gpu;
  for (size_t w = 0; w < workloads.size(); ++w) {
    if (workloads[w].infrastructure) continue;  // rule 5: never active, never a share
    for (const auto& g : workloads[w].by_gpu) {
      if (g.uuid.empty()) continue;
      auto& list = on_gpu[g.uuid];
      auto it = std::find_if(list.begin(), list.end(), [&](const OnGpu& o) { return o.workload == w; });
      if (it != list.end()) {
        if (it->gpu.empty()) it->gpu = g.gpu;
        continue;  // counters already folded by ActivityBaseline::of
      }
      OnGpu o;
      o.workload = w;
      o.gpu = g.gpu;
      if (previous) {
        const auto& now = current.counters.at({workloads[w].workload.id, g.uuid});
        ActivityBaseline::Counters before;
        if (auto b = previous->counters.find({workloads[w].workload.id, g.uuid}); b != previous->counters.end())
          before = b->second;
        o.busy_delta = counter_delta(before.busy_ns, now.busy_ns).delta;
        o.launch_delta = counter_delta(before.launches, now.launches).delta;
      }
      list.push_back(std::move(o));
    }
  }
  return on_gpu;
}

// NVML's processes by GPU, and the workload each belongs to (by host pid).
struct Processes {
  const Workloads& workloads;
  std::map<uint32_t, size_t> owner_of_pid;
  std::map<std::string, std::vector<const device::ProcessReading*>> on_gpu;  // by uuid

  Processes(const Workloads& w, const device::DeviceSnapshot& device) : workloads(w) {
    for (size_t i = 0; i < workloads.size(); ++i)
      for (const auto& p : workloads[i].processes) owner_of_pid.emplace(p.pid, i);
    for (const auto& p : device.processes)
      if (!p.gpu_uuid.empty()) on_gpu[p.gpu_uuid].push_back(&p);
  }
  std::optional<size_t> owner(const device::ProcessReading& p) const {
    auto it = owner_of_pid.find(p.pid);
    if (it == owner_of_pid.end()) return std::nullopt;
    return it->second;
  }
  // Rule 5: a process of an infrastructure workload (the MPS server) is known,
  // so not foreign, but it is no tenant: it never takes or breaks a share.
  bool infrastructure(const device::ProcessReading& p) const {
    auto w = owner(p);
    return w && workloads[*w].infrastructure;
  }
};

using DeviceValues = std::array<std::optional<double>, kEfficiencyFieldCount>;

// Rule 0: the device values of `uuid`, the first reading of each; null: no reading at all.
const device::DeviceReading* device_values(const device::DeviceSnapshot& device, const std::string& uuid,
                                           DeviceValues& values) {
  const device::DeviceReading* any_reading = nullptr;
  for (const auto& r : device.readings) {
    if (!reading_matches(r, uuid)) continue;
    if (!any_reading) any_reading = &r;
    for (const auto& info : efficiency_fields()) {
      auto& v = values[static_cast<size_t>(info.field)];
      if (!v && r[info.device_field]) v = r[info.device_field];
    }
  }
  return any_reading;
}

// One GPU's users: eBPF's and NVML's, and whether one of them has it to itself.
struct GpuUsers {
  const std::vector<OnGpu>& ebpf;
  const std::vector<const device::ProcessReading*>& procs;
  std::vector<const OnGpu*> active;  // rule 1
  bool foreign = false;              // a process of no known workload
  bool exclusive = false;            // rule 2
};

GpuUsers gpu_users(const std::vector<OnGpu>& ebpf, const std::vector<const device::ProcessReading*>& procs,
                   const Processes& processes) {
  GpuUsers u{ebpf, procs, {}, false, false};
  for (const auto& o : ebpf)
    if (o.active()) u.active.push_back(&o);
  u.foreign = std::any_of(procs.begin(), procs.end(), [&](const device::ProcessReading* p) { return !processes.owner(*p); });
  u.exclusive = u.active.size() == 1 && std::all_of(procs.begin(), procs.end(), [&](const device::ProcessReading* p) {
                  auto w = processes.owner(*p);
                  return w && (*w == u.active.front()->workload || processes.workloads[*w].infrastructure);
                });
  return u;
}

struct Shares {
  std::map<size_t, double> of;  // by workload index
  EfficiencySource source = EfficiencySource::kDevice;
  ShareBasis basis = ShareBasis::kNone;
};

// Rule 3: the shares of one GPU's users.
Shares gpu_shares(const GpuUsers& u, const Processes& processes, const EfficiencyOptions& options) {
  Shares s;
  if (u.exclusive) {
    s.of[u.active.front()->workload] = 1.0;
    s.basis = ShareBasis::kExclusive;
    return s;
  }
  double sm_total = 0;
  bool sampled = false;
  if (options.use_nvml_process_samples) {
    for (const auto* p : u.procs) {
      if (!p->sm_util_ratio || processes.infrastructure(*p)) continue;
      sampled = true;
      sm_total += *p->sm_util_ratio;
    }
  }
  if (sampled && sm_total > 0) {
    for (const auto* o : u.active) s.of[o->workload] = 0.0;
    std::map<size_t, double> sm;
    for (const auto* p : u.procs) {
      auto w = processes.owner(*p);
      if (!w || !p->sm_util_ratio || processes.workloads[*w].infrastructure) continue;
      sm[*w] += *p->sm_util_ratio;
      s.of[*w] = 0.0;
    }
    for (auto& [w, share] : s.of) share = sm[w] / sm_total;
    s.source = EfficiencySource::kNvml;
    s.basis = ShareBasis::kNvmlSmSamples;
  } else if (!u.active.empty() && (options.ebpf_split_with_foreign_processes || !u.foreign)) {
    uint64_t busy_total = 0, launch_total = 0;
    for (const auto* o : u.active) {
      busy_total += o->busy_delta;
      launch_total += o->launch_delta;
    }
    bool by_busy = busy_total > 0;
    double total = static_cast<double>(by_busy ? busy_total : launch_total);
    for (const auto* o : u.active)
      s.of[o->workload] = static_cast<double>(by_busy ? o->busy_delta : o->launch_delta) / total;
    s.source = EfficiencySource::kApportioned;
    s.basis = by_busy ? ShareBasis::kBusyNs : ShareBasis::kLaunches;
  }
  return s;
}

// The results of one apportioning, by (workload id, uuid): an entry is made
// (named, its GPU label found) the first time a workload gets a value on a GPU.
class Entries {
 public:
  Entries(const Workloads& workloads, const device::DeviceSnapshot& device) : workloads_(workloads), device_(device) {}
  WorkloadEfficiency& entry(size_t w, const std::string& uuid, const std::vector<OnGpu>& ebpf,
                            const device::DeviceReading& any_reading) {
    auto [it, inserted] = out_.try_emplace({workloads_[w].workload.id, uuid});
    WorkloadEfficiency& e = it->second;
    if (inserted) {
      e.workload = workloads_[w].workload;
      e.names = workloads_[w].names;
      e.uuid = uuid;
      for (const auto& o : ebpf)
        if (o.workload == w) e.gpu = o.gpu;
      if (e.gpu.empty()) {
        const device::GpuInfo* info = device_.gpu_by_uuid(uuid);
        e.gpu = info && info->index ? index_label(info->index) : index_label(any_reading.gpu_index);
      }
    }
    return e;
  }
  // The entries with at least one value.
  std::vector<WorkloadEfficiency> take() {
    std::vector<WorkloadEfficiency> results;
    for (auto& [key, e] : out_) {
      bool any = std::any_of(e.values.begin(), e.values.end(), [](const auto& v) { return v.has_value(); });
      if (any) results.push_back(std::move(e));
    }
    return results;
  }

 private:
  const Workloads& workloads_;
  const device::DeviceSnapshot& device_;
  std::map<std::pair<std::string, std::string>, WorkloadEfficiency> out_;
};

}  // namespace

std::vector<WorkloadEfficiency> apportion_efficiency(const attribution::AttributionSnapshot& snapshot,
                                                     const device::DeviceSnapshot& device,
                                                     const EfficiencyOptions& options,
                                                     const ActivityBaseline* previous) {
  const auto& workloads = snapshot.workloads;
  const std::map<std::string, std::vector<OnGpu>> on_gpu =
      ebpf_on_gpu(workloads, ActivityBaseline::of(snapshot), previous);
  const Processes processes(workloads, device);

  std::set<std::string> uuids;
  for (const auto& [uuid, _] : on_gpu) uuids.insert(uuid);
  for (const auto& [uuid, _] : processes.on_gpu) uuids.insert(uuid);

  Entries out(workloads, device);
  for (const auto& uuid : uuids) {
    DeviceValues device_value{};
    const device::DeviceReading* any_reading = device_values(device, uuid, device_value);
    if (!any_reading) continue;  // rule 0: no device values, nothing for this GPU

    static const std::vector<OnGpu> kNone;
    static const std::vector<const device::ProcessReading*> kNoProcs;
    auto og = on_gpu.find(uuid);
    auto pg = processes.on_gpu.find(uuid);
    const GpuUsers users = gpu_users(og == on_gpu.end() ? kNone : og->second,
                                     pg == processes.on_gpu.end() ? kNoProcs : pg->second, processes);
    auto entry = [&](size_t w) -> WorkloadEfficiency& { return out.entry(w, uuid, users.ebpf, *any_reading); };

    const Shares shares = gpu_shares(users, processes, options);
    for (const auto& [w, share] : shares.of) {
      auto& e = entry(w);
      e.share = share;
      e.basis = shares.basis;
      for (auto f : kRatioFields) {
        const auto& v = device_value[static_cast<size_t>(f)];
        if (!v) continue;
        e[f] = EfficiencyValue{users.exclusive ? *v : *v * share, shares.source};
      }
    }

    // Rule 4: memory used.
    std::map<size_t, uint64_t> used;
    for (const auto* p : users.procs) {
      auto w = processes.owner(*p);
      if (w && p->used_bytes) used[*w] += *p->used_bytes;
    }
    for (const auto& [w, bytes] : used)
      entry(w)[EfficiencyField::kGpuMemoryUsedBytes] = EfficiencyValue{static_cast<double>(bytes), EfficiencySource::kNvml};
    const auto& device_used = device_value[static_cast<size_t>(EfficiencyField::kGpuMemoryUsedBytes)];
    // The device figure includes an infrastructure process's memory: not the tenant's alone.
    bool infrastructure_on_gpu = std::any_of(users.procs.begin(), users.procs.end(),
                                             [&](const device::ProcessReading* p) { return processes.infrastructure(*p); });
    if (users.exclusive && device_used && !infrastructure_on_gpu && !used.count(users.active.front()->workload))
      entry(users.active.front()->workload)[EfficiencyField::kGpuMemoryUsedBytes] =
          EfficiencyValue{*device_used, EfficiencySource::kDevice};
  }
  return out.take();
}

void EfficiencyApportioner::update(const attribution::AttributionSnapshot& snapshot, const device::DeviceSnapshot& device) {
  results_ = apportion_efficiency(snapshot, device, options_, baseline_ ? &*baseline_ : nullptr);
  baseline_ = ActivityBaseline::of(snapshot);
  ++updates_;
}

void write_efficiency_metrics(const std::vector<WorkloadEfficiency>& results, metrics::ExpositionWriter& out) {
  for (const auto& info : efficiency_fields()) {
    bool any = std::any_of(results.begin(), results.end(), [&](const auto& e) { return e[info.field].has_value(); });
    if (!any) continue;
    out.family(info.metric, metrics::MetricType::kGauge, info.help);
    for (const auto& e : results) {
      const auto& v = e[info.field];
      if (!v) continue;
      out.sample(metrics::Labels{{"workload", e.workload.id},
                                  {"pod_uid", e.workload.pod_uid},
                                  {"container_id", e.workload.container_id},
                                  {"namespace", e.names.namespace_name},
                                  {"pod", e.names.pod},
                                  {"container", e.names.container},
                                  {"team", e.names.team},
                                  {"gpu", e.gpu},
                                  {"UUID", e.uuid},
                                  {"source", std::string(efficiency_source_name(v->source))}},
                 v->value);
    }
  }
}

WorkloadEfficiencyMetrics::WorkloadEfficiencyMetrics(std::function<attribution::AttributionSnapshot()> agent_snapshot,
                                                     std::function<device::DeviceSnapshot()> device_snapshot,
                                                     WorkloadEfficiencyMetricsOptions options)
    : agent_snapshot_(std::move(agent_snapshot)),
      device_snapshot_(std::move(device_snapshot)),
      options_(options),
      apportioner_(options.apportion) {}

void WorkloadEfficiencyMetrics::update_locked(Clock::time_point now) const {
  last_update_ = now;
  try {
    apportioner_.update(agent_snapshot_(), device_snapshot_());
  } catch (const std::exception& e) {
    // Serve nothing rather than stale values; the baseline stays, so the next
    // update measures over the longer interval.
    spdlog::warn("workload efficiency: cannot take snapshots: {}", e.what());
    apportioner_.discard_results();
  }
}

void WorkloadEfficiencyMetrics::write_metrics(metrics::ExpositionWriter& out) const {
  std::lock_guard lock(mu_);
  auto now = Clock::now();
  if (!last_update_ || now - *last_update_ >= options_.min_interval) update_locked(now);
  write_efficiency_metrics(apportioner_.results(), out);
}

void WorkloadEfficiencyMetrics::update() {
  std::lock_guard lock(mu_);
  update_locked(Clock::now());
}

std::vector<WorkloadEfficiency> WorkloadEfficiencyMetrics::results() const {
  std::lock_guard lock(mu_);
  return apportioner_.results();
}

}  // namespace gpuledger::node
