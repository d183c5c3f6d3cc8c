#include "device/device_snapshot.h"

#include <algorithm>
#include <cctype>

namespace gpuledger::device {

std::string_view source_name(Source source) { return source == Source::kDcgm ? "dcgm" : "nvml"; }

const std::array<DeviceFieldInfo, kDeviceFieldCount>& device_fields() {
  static const std::array<DeviceFieldInfo, kDeviceFieldCount> fields{{
      {DeviceField::kSmActiveRatio, "gpuledger_gpu_sm_active_ratio",
       "Ratio of cycles at least one warp was resident on an SM, averaged over SMs (DCGM_FI_PROF_SM_ACTIVE)."},
      {DeviceField::kSmOccupancyRatio, "gpuledger_gpu_sm_occupancy_ratio",
       "Ratio of resident warps to the maximum, averaged over SMs (DCGM_FI_PROF_SM_OCCUPANCY)."},
      {DeviceField::kTensorActiveRatio, "gpuledger_gpu_tensor_active_ratio",
       "Ratio of cycles the tensor pipe was active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)."},
      {DeviceField::kDramActiveRatio, "gpuledger_gpu_dram_active_ratio",
       "Ratio of cycles the device memory interface was active (DCGM_FI_PROF_DRAM_ACTIVE)."},
      {DeviceField::kGraphicsEngineActiveRatio, "gpuledger_gpu_graphics_engine_active_ratio",
       "Ratio of time the graphics/compute engine was active (DCGM_FI_PROF_GR_ENGINE_ACTIVE)."},
      {DeviceField::kUtilizationRatio, "gpuledger_gpu_utilization_ratio",
       "Ratio of time one or more kernels ran (DCGM_FI_DEV_GPU_UTIL, nvmlDeviceGetUtilizationRates)."},
      {DeviceField::kMemoryUsedBytes, "gpuledger_gpu_memory_used_bytes",
       "Device memory in use, bytes (DCGM_FI_DEV_FB_USED, nvmlDeviceGetMemoryInfo)."},
      {DeviceField::kMemoryFreeBytes, "gpuledger_gpu_memory_free_bytes",
       "Device memory free, bytes (DCGM_FI_DEV_FB_FREE, nvmlDeviceGetMemoryInfo)."},
      {DeviceField::kPowerWatts, "gpuledger_gpu_power_watts",
       "Power draw, watts (DCGM_FI_DEV_POWER_USAGE, nvmlDeviceGetPowerUsage)."},
      {DeviceField::kEnergyJoules, "gpuledger_gpu_energy_joules_total",
       "Energy consumed since the driver loaded, joules (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, "
       "nvmlDeviceGetTotalEnergyConsumption).",
       true},
  }};
  return fields;
}

const GpuInfo* DeviceSnapshot::gpu_by_uuid(std::string_view uuid) const {
  for (const auto& g : gpus)
    if (g.uuid == uuid) return &g;
  return nullptr;
}

const DeviceReading* DeviceSnapshot::reading(std::string_view uuid, Source source) const {
  for (const auto& r : readings)
    if (r.source == source && r.uuid == uuid && r.gpu_instance_id.empty()) return &r;
  return nullptr;
}

std::string normalize_pci_bus_id(std::string_view bus_id) {
  std::string s;
  for (char c : bus_id) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto all_hex = [](std::string_view v) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  };
  // Split DOMAIN:BUS:DEV.FN or BUS:DEV.FN
  auto last_colon = s.rfind(':');
  if (last_colon == std::string::npos) return s;
  auto first_colon = s.find(':');
  std::string domain = first_colon == last_colon ? "0" : s.substr(0, first_colon);
  std::string bus = first_colon == last_colon ? s.substr(0, first_colon) : s.substr(first_colon + 1, last_colon - first_colon - 1);
  std::string devfn = s.substr(last_colon + 1);
  auto dot = devfn.find('.');
  if (dot == std::string::npos || !all_hex(domain) || !all_hex(bus) || !all_hex(devfn.substr(0, dot)) ||
      !all_hex(devfn.substr(dot + 1)) || domain.size() > 8 || bus.size() > 2 || dot > 2)
    return s;
  auto pad = [](std::string v, size_t n) { return std::string(n > v.size() ? n - v.size() : 0, '0') + v; };
  return pad(domain, 8) + ":" + pad(bus, 2) + ":" + pad(devfn.substr(0, dot), 2) + "." + devfn.substr(dot + 1);
}

void merge_inventory(std::vector<GpuInfo>& into, const std::vector<GpuInfo>& more) {
  for (const auto& g : more) {
    auto it = std::find_if(into.begin(), into.end(), [&](const GpuInfo& have) {
      if (!g.uuid.empty() && !have.uuid.empty()) return have.uuid == g.uuid;
      return !g.pci_bus_id.empty() && have.pci_bus_id == g.pci_bus_id;
    });
    if (it == into.end()) {
      into.push_back(g);
      continue;
    }
    if (!it->index) it->index = g.index;
    if (it->uuid.empty()) it->uuid = g.uuid;
    if (it->model.empty()) it->model = g.model;
    if (it->pci_bus_id.empty()) it->pci_bus_id = g.pci_bus_id;
    if (!it->minor) it->minor = g.minor;
    if (!it->mig_enabled) it->mig_enabled = g.mig_enabled;
    if (!it->process_samples) {
      it->process_samples = g.process_samples;
      it->process_samples_error = g.process_samples_error;
    }
    if (!it->process_samples_split) it->process_samples_split = g.process_samples_split;
    for (const auto& o : g.origins)
      if (std::find(it->origins.begin(), it->origins.end(), o) == it->origins.end()) it->origins.push_back(o);
  }
  std::stable_sort(into.begin(), into.end(), [](const GpuInfo& a, const GpuInfo& b) {
    if (a.pci_bus_id != b.pci_bus_id) return a.pci_bus_id < b.pci_bus_id;
    return a.uuid < b.uuid;
  });
}

}  // namespace gpuledger::device
