#pragma once
// Turns a parsed dcgm-exporter page into per-device readings in base units.
//
// What real exporters print, and how it is read:
// - identity labels: UUID (old builds: uuid), gpu, modelName, pci_bus_id,
//   device ("nvidia0" -> minor 0), and the node's name: `Hostname` (builds
//   before NVIDIA/dcgm-exporter#655) or `hostname` (after it, 2026), the
//   same value whichever spelling (the first non-empty, Hostname first);
// - MIG instances: GPU_I_ID / GPU_I_PROFILE, UUID the parent GPU's; a reading
//   per (UUID, GPU_I_ID); GPU_I_ID "0" (a 7g instance) is an instance too;
// - Kubernetes: pod/namespace/container (old: pod_name/pod_namespace/
//   container_name), pod_uid, and with --kubernetes-virtual-gpus one copy of
//   each series per pod sharing the GPU (plus vgpu). The copies are ONE device
//   reading, never summed: a series without pod labels wins; else copies that
//   agree give their value; copies that disagree (per-process values, as
//   GPU_UTIL/FB_USED carry with virtual GPUs) give no device value (absent).
// - units: DCGM_FI_PROF_* are ratios already; GPU_UTIL percent -> ratio;
//   FB_USED/FB_FREE MiB -> bytes; POWER_USAGE watts; TOTAL_ENERGY_CONSUMPTION mJ -> joules.
// - NaN, negative or infinite values are absent; so are samples whose
//   timestamp is older than `max_sample_age` (a stale exporter cache).
#include <chrono>
#include <string>
#include <vector>

#include "device/device_snapshot.h"
#include "device/prometheus_parser.h"

namespace gpuledger::device {

// A pod that dcgm-exporter says uses a GPU (from the per-pod label copies).
struct DcgmPodDevice {
  std::string uuid;
  std::string gpu_instance_id;
  std::string namespace_name;
  std::string pod;
  std::string container;
};

struct DcgmExtraction {
  std::vector<DeviceReading> readings;  // source dcgm, sorted by (uuid, gpu_instance_id)
  std::vector<GpuInfo> gpus;            // whole GPUs named in the page, origin "dcgm"
  std::vector<DcgmPodDevice> pods;
  size_t samples_used = 0;      // samples of a recognised family with a device identity
  size_t samples_stale = 0;
  size_t conflicting_copies = 0;  // device values left absent because per-pod copies disagreed
};

DcgmExtraction extract_dcgm_readings(const ParsedPage& page,
                                     std::chrono::system_clock::time_point now = std::chrono::system_clock::now(),
                                     std::chrono::milliseconds max_sample_age = std::chrono::minutes(5));

}  // namespace gpuledger::device
