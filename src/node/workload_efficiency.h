#pragma once
// Efficiency per workload, honestly: the device counters of a GPU (SM active,
// SM occupancy, tensor active, DRAM active, memory used) given to the
// workloads on it, without ever copying a shared GPU's value to every tenant:
// an exclusive GPU's values are its workload's; a shared GPU's are split by
// NVML's per-process samples, else by the probes' busy time (launches when no
// span closed); memory is NVML's per process, else the device's on an
// exclusive GPU, else unknown; infrastructure (MPS) takes no share. The rules,
// case by case, and their limits are docs/ledger.md, "Efficiency per workload".
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
