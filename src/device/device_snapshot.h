#pragma once
// The device plane's view of the node: which GPUs exist, what the device
// counters say about each (from DCGM through dcgm-exporter, and from NVML),
// and which host processes hold memory / SM time on them (NVML).
//
// This is the join surface for the attribution plane: ProcessReading::pid is a
// HOST pid (NVML reports host pids even for containerised processes), so it
// joins attribution::ProcessView::pid directly; DeviceReading::uuid / GpuInfo::uuid
// is the GPU UUID ("GPU-..."; "MIG-..." for a MIG instance that dcgm-exporter
// names by its own UUID) that the Kubernetes pod-resources API also reports.
//
// Absent means "not measured": every reading is an std::optional and is never
// zero-filled. A snapshot is a value: copy it, keep it, compare it.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/nvml_status.h"

namespace gpuledger::device {

enum class Source { kDcgm, kNvml };
std::string_view source_name(Source source);  // "dcgm", "nvml"

// One physical GPU. Fields a source cannot tell are empty / nullopt.
struct GpuInfo {
  std::optional<unsigned> index;  // NVML enumeration order (PCI bus order); the dcgm-exporter "gpu" label
  std::string uuid;               // "GPU-..."
  std::string model;              // "NVIDIA A100-SXM4-80GB"
  std::string pci_bus_id;         // normalised "00000000:07:00.0" (8-digit domain, upper-case hex)
  std::optional<unsigned> minor;  // /dev/nvidia<minor>
  std::optional<bool> mig_enabled;
  // NVML answers per-process utilisation samples for it (nvmlDeviceGetProcessUtilization:
  // samples, or none since the last read); false: not supported (MIG, old
  // GPUs) or failing; unset: NVML did not say.
  std::optional<bool> process_samples;
  std::string process_samples_error;  // why not, when false
  // Whether those samples split the GPU between its processes
  // (ProcessSmTime::splits_processes): false on a driver that keeps one
  // sample per period for the whole GPU; unset until two processes were
  // sampled in one read.
  std::optional<bool> process_samples_split;
  std::vector<std::string> origins;  // "procfs", "nvml", "dcgm": who told us
};

// Device counters, one slot per field; the unit is in the field's name.
enum class DeviceField : size_t {
  kSmActiveRatio,
  kSmOccupancyRatio,
  kTensorActiveRatio,
  kDramActiveRatio,
  kGraphicsEngineActiveRatio,
  kUtilizationRatio,
  kMemoryUsedBytes,
  kMemoryFreeBytes,
  kPowerWatts,
  kEnergyJoules,  // a counter: energy since the driver loaded
  kCount,
};
inline constexpr size_t kDeviceFieldCount = static_cast<size_t>(DeviceField::kCount);

struct DeviceFieldInfo {
  DeviceField field;
  std::string_view metric;  // exported family name, e.g. "gpuledger_gpu_sm_active_ratio"
  std::string_view help;
  bool counter = false;  // exported as a Prometheus counter, not a gauge
};
const std::array<DeviceFieldInfo, kDeviceFieldCount>& device_fields();

// One device's readings from one source. For MIG, dcgm-exporter reports per
// GPU instance: gpu_instance_id / gpu_instance_profile are set and uuid is the
// label dcgm-exporter printed (the parent GPU's UUID on most versions).
struct DeviceReading {
  Source source = Source::kNvml;
  std::string uuid;
  std::optional<unsigned> gpu_index;
  std::string model;
  std::string hostname;
  std::string gpu_instance_id;       // MIG: GPU_I_ID; empty for a whole GPU
  std::string gpu_instance_profile;  // MIG: GPU_I_PROFILE, e.g. "1g.10gb"
  std::array<std::optional<double>, kDeviceFieldCount> values{};

  std::optional<double>& operator[](DeviceField f) { return values[static_cast<size_t>(f)]; }
  const std::optional<double>& operator[](DeviceField f) const { return values[static_cast<size_t>(f)]; }
};

// One host process on one GPU, from NVML.
struct ProcessReading {
  uint32_t pid = 0;                       // host pid
  std::string gpu_uuid;
  std::optional<uint64_t> used_bytes;     // nvmlProcessInfo_t.usedGpuMemory; absent when NVML says N/A
  std::optional<double> sm_util_ratio;    // mean of nvmlProcessUtilizationSample_t.smUtil since last poll
  std::optional<double> mem_util_ratio;   // likewise memUtil (memory controller)
  std::optional<unsigned> gpu_instance_id;      // MIG only
  std::optional<unsigned> compute_instance_id;  // MIG only
  bool mps = false;                       // reported by the MPS variant (an MPS client)
};

// SM-seconds of one process on one GPU since the NVML client opened: each
// sample's smUtil x the device's sampling period, summed over every sample
// newer than the cursor. Monotonic per (GPU, pid) while it is listed.
struct ProcessSmReading {
  std::string gpu_uuid;
  uint32_t pid = 0;
  double sm_seconds_total = 0;
  unsigned long long last_sample_us = 0;  // its newest sample's NVML timestamp (Unix us); 0 unknown
};

struct DevicePlaneHealth {
  bool nvml_up = false;
  NvmlStatus nvml_status = NvmlStatus::kLibraryAbsent;  // kUp exactly when nvml_up
  std::string nvml_error;   // why NVML is down (dlopen / nvmlInit message)
  bool nvml_simulator = false;  // the loaded library is gpuledger's NVML simulator
  bool dcgm_configured = false;
  bool dcgm_up = false;
  std::string dcgm_error;
  uint64_t dcgm_scrape_errors = 0;
  std::optional<std::chrono::system_clock::time_point> dcgm_last_success;
};

struct DeviceSnapshot {
  std::vector<GpuInfo> gpus;               // merged inventory, sorted by pci_bus_id
  std::vector<DeviceReading> readings;     // DCGM first, then NVML; per source sorted by uuid
  std::vector<ProcessReading> processes;   // sorted by (gpu_uuid, pid)
  // Per-process SM time to date (process_sm_time.h), for the ledger's split;
  // a process that exited keeps its entry a while. Sorted by (gpu_uuid, pid).
  std::vector<ProcessSmReading> process_sm;
  DevicePlaneHealth health;

  const GpuInfo* gpu_by_uuid(std::string_view uuid) const;
  // The reading for `uuid` (whole GPU) from `source`, if any.
  const DeviceReading* reading(std::string_view uuid, Source source) const;
};

// "0000:07:00.0", "00000000:07:00.0", "07:00.0" -> "00000000:07:00.0"; other
// text comes back unchanged (upper-cased).
std::string normalize_pci_bus_id(std::string_view bus_id);

// Folds `more` into `into` by UUID (falling back to PCI bus id): fills fields
// `into` lacks, appends origins. Keeps the result sorted by pci_bus_id.
void merge_inventory(std::vector<GpuInfo>& into, const std::vector<GpuInfo>& more);

}  // namespace gpuledger::device
