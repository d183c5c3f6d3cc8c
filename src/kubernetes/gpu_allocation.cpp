#include "kubernetes/gpu_allocation.h"

#include <algorithm>
#include <tuple>

namespace gpuledger::kubernetes {
namespace {

bool contains_ci(const std::string& hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return std::tolower(a) == std::tolower(b); });
  return it != hay.end();
}

// A DRA device: the UUID when a CDI name or the device name carries one
// (GPU-..., MIG-...), else empty; MIG when the device is a MIG slice.
GpuDevice dra_device(const ClaimDevice& c) {
  GpuDevice dev;
  auto find_uuid = [&](const std::string& s) -> std::string {
    for (const char* prefix : {"MIG-", "GPU-"}) {
      auto pos = s.find(prefix);
      if (pos != std::string::npos) {
        auto end = s.find_first_of(",;= ", pos);
        return s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      }
    }
    return "";
  };
  dev.uuid = find_uuid(c.device_name);
  for (const auto& cdi : c.cdi_devices)
    if (dev.uuid.empty()) dev.uuid = find_uuid(cdi);
  dev.sharing = contains_ci(c.device_name, "mig") ? Sharing::kMig : Sharing::kExclusive;
  return dev;
}

void sort_unique(std::vector<GpuAllocation>& out) {
  auto key = [](const GpuAllocation& a) {
    return std::tie(a.namespace_name, a.pod, a.container, a.resource, a.device_id);
  };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  out.erase(std::unique(out.begin(), out.end(), [&](const auto& a, const auto& b) { return key(a) == key(b); }),
            out.end());
}

}  // namespace

std::vector<GpuAllocation> gpu_allocations(const std::vector<PodAllocation>& pods, const AllocationOptions& options,
                                           size_t* skipped) {
  std::vector<GpuAllocation> out;
  size_t bad = 0;
  for (const auto& pod : pods) {
    for (const auto& c : pod.containers) {
      for (const auto& devs : c.devices) {
        if (!is_gpu_resource(devs.resource_name, options.extra_resources)) continue;
        for (const auto& id : devs.device_ids) {
          auto dev = parse_device_id(devs.resource_name, id);
          if (!dev) {
            ++bad;
            continue;
          }
          out.push_back({pod.namespace_name, pod.name, c.name, devs.resource_name, id, *dev, 1.0, sharing_mode(*dev)});
        }
      }
      for (const auto& claim : c.dynamic) {
        if (std::find(options.dra_drivers.begin(), options.dra_drivers.end(), claim.driver_name) ==
            options.dra_drivers.end())
          continue;
        if (claim.device_name.empty()) {
          ++bad;
          continue;
        }
        out.push_back({pod.namespace_name, pod.name, c.name, claim.driver_name,
                       claim.pool_name + "/" + claim.device_name, dra_device(claim), 1.0, "dra"});
      }
    }
  }
  sort_unique(out);
  if (skipped) *skipped = bad;
  return out;
}

std::vector<GpuAllocation> gpu_inventory(const std::vector<ContainerDevices>& allocatable,
                                         const AllocationOptions& options, size_t* skipped) {
  std::vector<GpuAllocation> out;
  size_t bad = 0;
  for (const auto& devs : allocatable) {
    if (!is_gpu_resource(devs.resource_name, options.extra_resources)) continue;
    for (const auto& id : devs.device_ids) {
      auto dev = parse_device_id(devs.resource_name, id);
      if (!dev) {
        ++bad;
        continue;
      }
      out.push_back({"", "", "", devs.resource_name, id, *dev, 1.0, sharing_mode(*dev)});
    }
  }
  sort_unique(out);
  if (skipped) *skipped = bad;
  return out;
}

}  // namespace gpuledger::kubernetes
