#pragma once
// Which pods and containers hold which GPUs, from what the kubelet's Pod
// Resources API says (plain structs here; pod_resources_client.h fills them).
#include <string>
#include <vector>

#include "kubernetes/device_ids.h"

namespace gpuledger::kubernetes {

struct ClaimDevice {  // one DRA device
  std::string driver_name, pool_name, device_name;
  std::vector<std::string> cdi_devices;
  std::string claim_name, claim_namespace;
};

struct ContainerDevices {
  std::string resource_name;
  std::vector<std::string> device_ids;
};

struct ContainerAllocation {
  std::string name;
  std::vector<ContainerDevices> devices;
  std::vector<ClaimDevice> dynamic;
};

struct PodAllocation {
  std::string name, namespace_name;
  std::vector<ContainerAllocation> containers;
};

// One (pod, container, device) triple.
struct GpuAllocation {
  std::string namespace_name, pod, container;
  std::string resource;   // e.g. nvidia.com/gpu; for DRA the driver name (gpu.nvidia.com)
  std::string device_id;  // as the kubelet gave it; for DRA "<pool>/<device>"
  GpuDevice device;
  // The part of `device` (the physical GPU, or the MIG instance when device is
  // a MIG slice) allocated to this entry, in (0, 1]: 1 for a whole device or a
  // whole MIG instance; 1/N for one of N time-slicing or MPS replicas; a HAMi
  // or KAI/Run:ai fraction; a DRA claim's part when pods share the claim.
  // Replicas of one device held by one container are one entry whose share is
  // their sum (never one entry per replica slot). See docs/kubernetes-sharing.md.
  double share = 1.0;
  // How the device is shared, as an admin would say it: "exclusive",
  // "time-slicing", "mps", "mig", "mig-time-slicing", "fraction", "dra",
  // "dra-shared"; "" = not known.
  std::string mode;
  // Whether `share` was established. false: the sources could not say how many
  // replicas the device has (no GetAllocatableResources answer and no GFD
  // replicas label), or a fraction's device total is unknown; share is then
  // 1.0 and means nothing: the holder shares the device in an unknown part.
  bool share_known = true;
  // What the share was computed from: "whole", "replicas" (held / advertised),
  // "cores" (HAMi gpucores percent), "memory" (MiB / device total),
  // "fraction" (KAI gpu-fraction), "claim" (1 / containers sharing a DRA claim).
  std::string share_basis = "whole";
  bool operator==(const GpuAllocation&) const = default;
};

struct AllocationOptions {
  std::vector<std::string> extra_resources;
  std::vector<std::string> dra_drivers = {"gpu.nvidia.com"};
};

// Sorted by (namespace, pod, container, resource, device_id); ids that cannot
// be devices are skipped and counted in *skipped.
std::vector<GpuAllocation> gpu_allocations(const std::vector<PodAllocation>& pods, const AllocationOptions& options,
                                           size_t* skipped = nullptr);

// The node's GPU inventory (GetAllocatableResources): one entry per device.
std::vector<GpuAllocation> gpu_inventory(const std::vector<ContainerDevices>& allocatable,
                                         const AllocationOptions& options, size_t* skipped = nullptr);

}  // namespace gpuledger::kubernetes
