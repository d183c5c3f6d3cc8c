#pragma once
// Efficiency per workload, honestly: the device counters of a GPU (SM active,
// SM occupancy, tensor active, DRAM active, memory used) given to the
// workloads on it, without ever copying a shared GPU's value to every tenant.
//
// THE RULES, per GPU UUID U (evaluated on every update):
//
//  0. Device value. The first reading in DeviceSnapshot order (DCGM, then
//     NVML) that matches U and has the field. A reading matches U when its
//     uuid equals U exactly and it is a whole-GPU reading (gpu_instance_id
//     empty), or when U is itself a MIG UUID ("MIG-...") and the reading
//     carries that same UUID. A GPU with no matching reading gets NOTHING
//     exported (unknown, never 0); likewise a field the reading lacks.
//
//  1. Who is on U. A workload is ACTIVE on U when its AgentSnapshot by_gpu
//     entry with uuid == U (exactly; empty uuids never match) grew over the
//     INTERVAL since the previous update: delta busy_ns > 0 or delta launches
//     > 0. Counters are cumulative, so the apportioner keeps the previous
//     update's (workload id, uuid) -> {busy_ns, launches}. A pair absent from
//     the previous update has baseline 0 (the agent had counted nothing for it
//     then); a counter that went backwards (a reused workload id) counts from
//     0. With no previous update at all (the first one) nobody is active:
//     eBPF activity needs an interval. NVML processes on U are those
//     ProcessReadings with gpu_uuid == U; a process BELONGS to a workload when
//     its host pid is in that WorkloadView's `processes`. A process of no
//     workload is FOREIGN.
//
//  2. Exclusive. Exactly one active workload on U, and every NVML process on U
//     belongs to it (no NVML process list: decided on eBPF alone). Its ratios
//     are the device values, source="device"; share 1.
//
//  3. Shared (anything else with someone on U):
//     a. NVML samples. When options.use_nvml_process_samples and at least one
//        NVML process on U has sm_util_ratio with a total > 0 over ALL
//        processes on U (foreign ones included): a workload's share = the sum
//        of its processes' sm_util_ratio / that total, ratios = device value x
//        share, source="nvml". Participants: the active workloads and every
//        workload owning a sampled process on U (an active workload without
//        samples gets share 0: NVML saw no SM time from it). FOREIGN processes'
//        share goes to no-one and is not exported, so the exported parts add
//        up to the device value minus the foreign part.
//     b. eBPF activity. Otherwise, over the active workloads: share = the
//        workload's delta busy_ns / the sum of delta busy_ns, when that sum is
//        > 0; else delta launches / sum of delta launches. busy_ns is primary
//        because it is time, like the device ratios; launches only say "it
//        ran something". One measure per GPU and interval, never mixed (a
//        workload that launched but whose span closes only in a later interval
//        gets share 0 under busy_ns). Ratios = device value x share,
//        source="apportioned". The parts add up to the device value. Foreign
//        NVML processes have no samples to weigh them here, so they are folded
//        into the known tenants' parts (an MPS control daemon is such a
//        process); set options.ebpf_split_with_foreign_processes = false to
//        export nothing for the ratios of such a GPU instead.
//
//  4. Memory used (gpuledger_workload_gpu_memory_used_bytes):
//     a. NVML per-process used_bytes of the workload's processes on U, summed:
//        source="nvml" (measured, not apportioned), whether or not the
//        workload was active in the interval;
//     b. else, on an exclusive GPU, the device's memory used: source="device";
//     c. else unknown. eBPF live bytes are allocations seen by the probes,
//        not device memory used, and are never exported under this name.
//
//  5. Infrastructure (WorkloadView::infrastructure: the CUDA MPS control
//     daemon and server) is no tenant and never takes a share of the ratios:
//     it is never active by eBPF (its kernels are its clients' work), its
//     NVML SM samples are left out of rule 3a's total (they are the clients'
//     work, which NVML cannot split; with no tenant samples rule 3b decides),
//     and its processes neither count as foreign nor end exclusivity (a single
//     tenant behind the MPS server has the GPU to itself). Its own NVML
//     per-process memory (rule 4a) is still exported as its own, and rule 4b
//     does not apply beside it (the device figure includes its memory).
//
// Limits: MIG instances are separate devices. A DCGM reading of one instance
// that carries the parent GPU's UUID plus GPU_I_ID is never joined (a
// workload's uuid names a MIG instance or the whole GPU; neither can be tied to
// (parent, GPU_I_ID) from the snapshots). NVML lists processes and memory per
// physical GPU, so on a MIG-enabled GPU per-process memory is reported under
// the parent GPU's UUID, and NVML gives no per-process SM samples there.
// The windows are not aligned: DCGM values average over dcgm-exporter's
// sampling period, NVML samples cover NVML's poll interval, eBPF deltas cover
// the time between two updates; keep updates at least as far apart as the
// device polls.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attribution/snapshot.h"
#include "device/device_snapshot.h"
#include "identity/workload.h"
#include "identity/workload_names.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::node {

// How a value was obtained: the "source" label.
enum class EfficiencySource {
  kDevice,       // the device value of a GPU the workload had to itself
  kNvml,         // memory: NVML per-process; ratios: device value x NVML SM-sample share
  kApportioned,  // device value x eBPF activity share (busy_ns, else launches)
};
std::string_view efficiency_source_name(EfficiencySource source);  // "device", "nvml", "apportioned"

enum class EfficiencyField : size_t {
  kSmActiveRatio,
  kSmOccupancyRatio,
  kTensorActiveRatio,
  kDramActiveRatio,
  kGpuMemoryUsedBytes,
  kCount,
};
inline constexpr size_t kEfficiencyFieldCount = static_cast<size_t>(EfficiencyField::kCount);

struct EfficiencyFieldInfo {
  EfficiencyField field;
  device::DeviceField device_field;  // where its device value comes from
  std::string_view metric;   // "gpuledger_workload_sm_active_ratio", ...
  std::string_view help;
};
const std::array<EfficiencyFieldInfo, kEfficiencyFieldCount>& efficiency_fields();

struct EfficiencyValue {
  double value = 0;
  EfficiencySource source = EfficiencySource::kDevice;
  bool operator==(const EfficiencyValue&) const = default;
};

// Which measure the activity shares on a GPU came from (diagnostics, tests).
enum class ShareBasis { kNone, kExclusive, kNvmlSmSamples, kBusyNs, kLaunches };

// One workload on one GPU.
struct WorkloadEfficiency {
  identity::Workload workload;  // id, pod_uid, container_id, ...
  identity::WorkloadNames names;
  std::string gpu;   // the node's GPU index label: the workload's by_gpu entry, else the device inventory
  std::string uuid;  // exactly the UUID joined on
  std::array<std::optional<EfficiencyValue>, kEfficiencyFieldCount> values{};
  std::optional<double> share;  // the share the ratios were split by (1 when exclusive); none: memory only
  ShareBasis basis = ShareBasis::kNone;

  std::optional<EfficiencyValue>& operator[](EfficiencyField f) { return values[static_cast<size_t>(f)]; }
  const std::optional<EfficiencyValue>& operator[](EfficiencyField f) const { return values[static_cast<size_t>(f)]; }
};

struct EfficiencyOptions {
  bool use_nvml_process_samples = true;           // rule 3a; false: always 3b
  bool ebpf_split_with_foreign_processes = true;  // rule 3b with foreign NVML processes on the GPU
};

// The activity counters of the previous update, per (workload id, GPU uuid).
struct ActivityBaseline {
  struct Counters {
    uint64_t busy_ns = 0;
    uint64_t launches = 0;
  };
  std::map<std::pair<std::string, std::string>, Counters> counters;
  static ActivityBaseline of(const attribution::AttributionSnapshot& snapshot);  // entries with a uuid only
};

// The rules above, as a pure function. `previous` is the baseline the
// activity deltas are taken against; nullptr: no interval, nobody is active by
// eBPF (only NVML samples and NVML memory can say anything). Sorted by
// (workload id, uuid).
std::vector<WorkloadEfficiency> apportion_efficiency(const attribution::AttributionSnapshot& snapshot,
                                                     const device::DeviceSnapshot& device,
                                                     const EfficiencyOptions& options,
                                                     const ActivityBaseline* previous = nullptr);

// Keeps the baseline between updates. Not thread-safe by itself.
class EfficiencyApportioner {
 public:
  explicit EfficiencyApportioner(EfficiencyOptions options = {}) : options_(options) {}
  // Apportions `device` over the interval since the previous update; the
  // first update has no interval (see apportion_efficiency).
  void update(const attribution::AttributionSnapshot& snapshot, const device::DeviceSnapshot& device);
  const std::vector<WorkloadEfficiency>& results() const { return results_; }
  // Forgets the results (a failed update) but keeps the baseline.
  void discard_results() { results_.clear(); }
  size_t updates() const { return updates_; }

 private:
  EfficiencyOptions options_;
  std::optional<ActivityBaseline> baseline_;
  std::vector<WorkloadEfficiency> results_;
  size_t updates_ = 0;
};

// Writes the gpuledger_workload_* efficiency families (gauges) for `results`,
// labels workload, pod_uid, container_id, namespace, pod, container, team,
// gpu, UUID, source. A family with no sample is left out.
void write_efficiency_metrics(const std::vector<WorkloadEfficiency>& results, metrics::ExpositionWriter& out);

struct WorkloadEfficiencyMetricsOptions {
  EfficiencyOptions apportion;
  // A scrape sooner than this after the previous update re-serves its results
  // instead of taking a near-empty interval (two Prometheus replicas, a
  // curl): activity deltas over a few milliseconds say nothing.
  std::chrono::milliseconds min_interval{std::chrono::seconds(10)};
};

// The /metrics contributor. At scrape time it takes both snapshots from the
// suppliers (when min_interval has passed since the previous update), updates
// its apportioner and writes the results. Thread-safe: one mutex around the
// apportioner; concurrent scrapes are serialised. Suppliers are called with
// that mutex held and must not call back into this object.
class WorkloadEfficiencyMetrics : public metrics::MetricsContributor {
 public:
  using Clock = std::chrono::steady_clock;
  WorkloadEfficiencyMetrics(std::function<attribution::AttributionSnapshot()> agent_snapshot,
                            std::function<device::DeviceSnapshot()> device_snapshot,
                            WorkloadEfficiencyMetricsOptions options = {});
  void write_metrics(metrics::ExpositionWriter& out) const override;
  // Takes both snapshots and updates now, whatever min_interval says.
  void update();
  std::vector<WorkloadEfficiency> results() const;

 private:
  void update_locked(Clock::time_point now) const;

  std::function<attribution::AttributionSnapshot()> agent_snapshot_;
  std::function<device::DeviceSnapshot()> device_snapshot_;
  WorkloadEfficiencyMetricsOptions options_;
  mutable std::mutex mu_;
  mutable EfficiencyApportioner apportioner_;
  mutable std::optional<Clock::time_point> last_update_;
};

}  // namespace gpuledger::node
