#pragma once
// Makes each GPU allocation say its share of the device and how the device is
// shared (GpuAllocation::share, ::mode), from the kubelet's answer and what
// the API server says (sharing_facts.h). docs/kubernetes-sharing.md has each
// form with its sources, its share and what is trusted.
//
//   time-slicing / MPS replicas ("<id>::<n>", nvidia.com/gpu.shared, GKE
//     "/vgpu<V>"): one entry per (pod, container, device) whatever the number
//     of replica slots it holds; share = slots held / slots the node
//     advertises for that device (GetAllocatableResources, else the GFD label
//     nvidia.com/gpu.replicas or nvidia.com/mig-<profile>.replicas, else
//     unknown: share_known false). Mode "mps" on a node GFD labels
//     nvidia.com/gpu.sharing-strategy=mps, else "time-slicing";
//     "mig-time-slicing" for replicas of a MIG device.
//   MIG: share 1 of the instance, mode "mig".
//   HAMi: the scheduler's hami.io/vgpu-devices-allocated replaces the
//     container's plugin ids (trusted only when bound, on this node, written
//     by HAMi's scheduler, not below the container's resource requests, and
//     naming the devices the kubelet handed the container: record_trust.h);
//     share = usedcores/100, else usedmem / device memory; mode "fraction".
//     A refused record bills the whole device.
//   KAI / Run:ai: the reservation pod (in the reservation namespace) that
//     holds the GPU is no holder; each pod of its runai-gpu-group (a label
//     KAI wrote) running here gets its gpu-fraction (or gpu-memory / device
//     memory) of that GPU when no one but KAI wrote it after the pod was
//     scheduled; mode "fraction". A refused record bills the whole GPU.
//   DRA: a device without a UUID in its names gets it from the node's
//     ResourceSlices; a claim device used by N pod containers gives each 1/N,
//     mode "dra-shared" (N > 1) or "dra".
#include <cstdint>
#include <map>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "kubernetes/gpu_allocation.h"
#include "kubernetes/record_trust.h"
#include "kubernetes/sharing_facts.h"

namespace gpuledger::kubernetes {

struct SharingStats {
  uint64_t refused_annotations = 0;  // HAMi / KAI records not trusted (record_trust.h), = refused.size()
  uint64_t unknown_shares = 0;       // entries whose share could not be established
  std::vector<RefusedRecord> refused;  // which, and why
  void refuse(RefusedRecord record);
};

// `allocations` from gpu_allocations(pods, ...); `allocatable` the
// GetAllocatableResources answer (null when it did not answer). Sorted like
// gpu_allocations.
std::vector<GpuAllocation> resolve_sharing(std::vector<GpuAllocation> allocations,
                                           const std::vector<PodAllocation>& pods,
                                           const std::vector<ContainerDevices>* allocatable,
                                           const SharingFacts& facts, const AllocationOptions& options,
                                           SharingStats* stats = nullptr);

// KAI's gpu-fraction: a decimal in (0, 1] with at most 6 decimals, else nullopt.
std::optional<double> parse_gpu_fraction(std::string_view value);

// Helpers the steps share: a map's value or ""; a share of memory (MiB of
// a total, unknown when the total is); a share that cannot be known.
std::string sharing_value(const std::map<std::string, std::string>& m, std::string_view key);
void set_memory_share(GpuAllocation& a, uint64_t mib, std::optional<uint64_t> total_mib);
void set_unknown_share(GpuAllocation& a, const char* basis);
// The safe default for a holder whose scheduler record was refused: the
// whole of what it holds (share 1, basis "refused").
void set_refused_share(GpuAllocation& a);

// The steps, in the order resolve_sharing runs them (sharing_*.cpp).
void resolve_dra(std::vector<GpuAllocation>& allocations, const std::vector<PodAllocation>& pods,
                 const SharingFacts& facts, const AllocationOptions& options);
void resolve_hami(std::vector<GpuAllocation>& allocations, const SharingFacts& facts, SharingStats& stats);
void resolve_kai(std::vector<GpuAllocation>& allocations, const std::vector<PodAllocation>& pods,
                 const SharingFacts& facts, SharingStats& stats);
void resolve_replicas(std::vector<GpuAllocation>& allocations, const std::vector<ContainerDevices>* allocatable,
                      const SharingFacts& facts, const AllocationOptions& options);

}  // namespace gpuledger::kubernetes
