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

bool is_sharing_node_key(std::string_view key) {
  if (key == kHamiNodeRegister || key == kGfdStrategy || key == kGfdReplicas || key == kGfdMpsCapable) return true;
  return key.starts_with("nvidia.com/mig-") && key.ends_with(".replicas");
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
