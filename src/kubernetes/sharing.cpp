#include "kubernetes/sharing.h"

#include <algorithm>
#include <tuple>

namespace gpuledger::kubernetes {

bool is_sharing_pod_key(std::string_view key) {
  for (auto k : {kHamiAllocated, kHamiNode, kHamiBindPhase, kKaiFraction, kKaiMemory, kKaiContainer, kKaiGpu,
                 kKaiReserveFor, kKaiGroupLabel})
    if (key == k) return true;
  return false;
}

bool is_sharing_resource(std::string_view resource) {
  return resource == kHamiCores || resource == kHamiMem || resource == kHamiMemPercent;
}

bool is_sharing_node_key(std::string_view key) {
  if (key == kHamiNodeRegister || key == kGfdStrategy || key == kGfdReplicas || key == kGfdMpsCapable) return true;
  return key.starts_with("nvidia.com/mig-") && key.ends_with(".replicas");
}

std::string sharing_value(const std::map<std::string, std::string>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  return it == m.end() ? "" : it->second;
}

void set_memory_share(GpuAllocation& a, uint64_t mib, std::optional<uint64_t> total_mib) {
  if (mib == 0 || !total_mib || *total_mib == 0) return set_unknown_share(a, "memory");
  a.share = std::min(1.0, static_cast<double>(mib) / static_cast<double>(*total_mib));
  a.share_basis = "memory";
}

void set_unknown_share(GpuAllocation& a, const char* basis) {
  a.share = 1.0;
  a.share_known = false;
  a.share_basis = basis;
}

void set_refused_share(GpuAllocation& a) {
  a.share = 1.0;
  a.share_known = true;
  a.share_basis = "refused";
}

void SharingStats::refuse(RefusedRecord record) {
  ++refused_annotations;
  refused.push_back(std::move(record));
}

std::vector<GpuAllocation> resolve_sharing(std::vector<GpuAllocation> allocations,
                                           const std::vector<PodAllocation>& pods,
                                           const std::vector<ContainerDevices>* allocatable,
                                           const SharingFacts& facts, const AllocationOptions& options,
                                           SharingStats* stats) {
  SharingStats local;
  SharingStats& st = stats ? *stats : local;
  st = {};
  resolve_dra(allocations, pods, facts, options);
  resolve_hami(allocations, facts, st);
  resolve_kai(allocations, pods, facts, st);
  resolve_replicas(allocations, allocatable, facts, options);
  for (auto& a : allocations) {
    if (a.share_basis == "whole") {  // a whole device or a whole MIG instance
      a.share = 1.0;
      a.mode = sharing_mode(a.device);
    }
    if (!a.share_known) ++st.unknown_shares;
  }
  auto key = [](const GpuAllocation& a) {
    return std::tie(a.namespace_name, a.pod, a.container, a.resource, a.device_id);
  };
  std::sort(allocations.begin(), allocations.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return allocations;
}

}  // namespace gpuledger::kubernetes
