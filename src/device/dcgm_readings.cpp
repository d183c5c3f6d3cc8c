#include "device/dcgm_readings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace gpuledger::device {
namespace {

struct FamilyRule {
  std::string_view family;
  DeviceField field;
  double scale;
};

constexpr FamilyRule kRules[] = {
    {"DCGM_FI_PROF_SM_ACTIVE", DeviceField::kSmActiveRatio, 1.0},
    {"DCGM_FI_PROF_SM_OCCUPANCY", DeviceField::kSmOccupancyRatio, 1.0},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", DeviceField::kTensorActiveRatio, 1.0},
    {"DCGM_FI_PROF_DRAM_ACTIVE", DeviceField::kDramActiveRatio, 1.0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", DeviceField::kGraphicsEngineActiveRatio, 1.0},
    {"DCGM_FI_DEV_GPU_UTIL", DeviceField::kUtilizationRatio, 0.01},
    {"DCGM_FI_DEV_FB_USED", DeviceField::kMemoryUsedBytes, 1024.0 * 1024.0},
    {"DCGM_FI_DEV_FB_FREE", DeviceField::kMemoryFreeBytes, 1024.0 * 1024.0},
    {"DCGM_FI_DEV_POWER_USAGE", DeviceField::kPowerWatts, 1.0},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", DeviceField::kEnergyJoules, 0.001},  // mJ
};

const FamilyRule* rule_for(std::string_view name) {
  for (const auto& r : kRules)
    if (r.family == name) return &r;
  return nullptr;
}

const std::string* first_label(const ParsedSample& s, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (const auto* v = s.label(n); v && !v->empty()) return v;
  return nullptr;
}

std::string label_or_empty(const ParsedSample& s, std::initializer_list<std::string_view> names) {
  const auto* v = first_label(s, names);
  return v ? *v : std::string();
}

std::optional<unsigned> parse_unsigned(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool has_pod_labels(const ParsedSample& s) {
  return first_label(s, {"pod", "pod_name", "namespace", "pod_namespace", "container", "container_name", "pod_uid",
                         "vgpu"}) != nullptr;
}

using Key = std::pair<std::string, std::string>;  // (uuid, gpu instance id)

struct Copies {
  std::optional<double> device_value;  // from a series without pod labels
  std::vector<double> pod_values;
};

}  // namespace

DcgmExtraction extract_dcgm_readings(const ParsedPage& page, std::chrono::system_clock::time_point now,
                                     std::chrono::milliseconds max_sample_age) {
  DcgmExtraction out;
  std::map<Key, DeviceReading> readings;
  std::map<Key, std::array<Copies, kDeviceFieldCount>> copies;
  std::map<std::string, GpuInfo> gpus;
  std::set<std::tuple<std::string, std::string, std::string, std::string, std::string>> pods;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();

  for (const auto& s : page.samples) {
    const FamilyRule* rule = rule_for(s.name);
    if (!rule) continue;
    std::string uuid = label_or_empty(s, {"UUID", "uuid"});
    std::string gpu_label = label_or_empty(s, {"gpu"});
    std::string hostname = label_or_empty(s, {"Hostname", "hostname"});
    if (uuid.empty()) {
      // No UUID at all: fall back to the index on that host so the series
      // still forms one device (never merged with another host's gpu 0).
      if (gpu_label.empty()) continue;
      uuid = "gpu-index:" + hostname + ":" + gpu_label;
    }
    std::string instance = label_or_empty(s, {"GPU_I_ID"});
    if (s.timestamp_ms && max_sample_age.count() > 0 && now_ms - *s.timestamp_ms > max_sample_age.count()) {
      ++out.samples_stale;
      continue;
    }
    ++out.samples_used;
    Key key{uuid, instance};
    auto [it, inserted] = readings.try_emplace(key);
    DeviceReading& r = it->second;
    if (inserted) {
      r.source = Source::kDcgm;
      r.uuid = uuid;
      r.gpu_instance_id = instance;
    }
    if (!r.gpu_index) r.gpu_index = parse_unsigned(gpu_label);
    if (r.model.empty()) r.model = label_or_empty(s, {"modelName", "modelname", "model_name"});
    if (r.hostname.empty()) r.hostname = hostname;
    if (r.gpu_instance_profile.empty()) r.gpu_instance_profile = label_or_empty(s, {"GPU_I_PROFILE"});

    // Inventory: the whole GPU (for a MIG series, the parent named by UUID).
    if (uuid.rfind("gpu-index:", 0) != 0) {
      std::string parent = label_or_empty(s, {"parent_uuid", "GPU_UUID"});
      const std::string& gpu_uuid = (!instance.empty() && !parent.empty()) ? parent : uuid;
      auto& g = gpus[gpu_uuid];
      g.uuid = gpu_uuid;
      if (g.origins.empty()) g.origins = {"dcgm"};
      if (!g.index) g.index = parse_unsigned(gpu_label);
      if (g.model.empty()) g.model = r.model;
      if (g.pci_bus_id.empty()) {
        std::string bus = label_or_empty(s, {"pci_bus_id"});
        if (!bus.empty()) g.pci_bus_id = normalize_pci_bus_id(bus);
      }
      if (!g.minor) {
        std::string dev = label_or_empty(s, {"device"});
        if (dev.rfind("nvidia", 0) == 0) g.minor = parse_unsigned(std::string_view(dev).substr(6));
      }
      if (!instance.empty()) g.mig_enabled = true;
    }

    if (has_pod_labels(s)) {
      pods.emplace(uuid, instance, label_or_empty(s, {"namespace", "pod_namespace"}),
                   label_or_empty(s, {"pod", "pod_name"}), label_or_empty(s, {"container", "container_name"}));
    }

    double v = s.value;
    if (std::isnan(v) || std::isinf(v) || v < 0) continue;  // cannot measure: absent
    v *= rule->scale;
    if (std::isinf(v)) continue;  // overflowed in unit conversion
    auto& c = copies[key][static_cast<size_t>(rule->field)];
    if (has_pod_labels(s)) c.pod_values.push_back(v);
    else if (!c.device_value) c.device_value = v;
  }

  for (auto& [key, r] : readings) {
    auto cit = copies.find(key);
    if (cit == copies.end()) continue;
    for (size_t f = 0; f < kDeviceFieldCount; ++f) {
      const Copies& c = cit->second[f];
      if (c.device_value) {
        r.values[f] = c.device_value;
      } else if (!c.pod_values.empty()) {
        auto [lo, hi] = std::minmax_element(c.pod_values.begin(), c.pod_values.end());
        double tolerance = 1e-9 * std::max(1.0, std::abs(*hi));
        if (*hi - *lo <= tolerance) r.values[f] = *lo;
        else ++out.conflicting_copies;
      }
    }
  }
  // MIG-enabled GPUs: the parent also has whole-GPU series on some versions;
  // those stay as their own reading (gpu_instance_id empty).
  for (auto& [key, r] : readings) out.readings.push_back(std::move(r));
  for (auto& [uuid, g] : gpus) {
    // mig_enabled stays unset without MIG series: their absence proves nothing.
    out.gpus.push_back(std::move(g));
  }
  for (const auto& [uuid, instance, ns, pod, container] : pods) out.pods.push_back({uuid, instance, ns, pod, container});
  return out;
}

}  // namespace gpuledger::device
