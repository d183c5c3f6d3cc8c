#pragma once
// What the Kubernetes API server says that bears on how this node's GPUs are
// shared, beyond the kubelet's Pod Resources answer: the node's GPU Feature
// Discovery labels and HAMi registration, the scheduler records on pods (HAMi,
// KAI / Run:ai), and the DRA ResourceSlices that map a device name to a UUID.
// Plain data; kubernetes_metadata.h keeps it current, sharing.h reads it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kubernetes/field_owners.h"

namespace gpuledger::kubernetes {

// The pod annotations sharing reads (only these are kept from the API, each
// value at most kMaxSharingValue bytes: a pod's annotations are its owner's).
inline constexpr std::string_view kHamiAllocated = "hami.io/vgpu-devices-allocated";
inline constexpr std::string_view kHamiNode = "hami.io/vgpu-node";
inline constexpr std::string_view kHamiBindPhase = "hami.io/bind-phase";
inline constexpr std::string_view kHamiNodeRegister = "hami.io/node-nvidia-register";  // a node annotation
inline constexpr std::string_view kKaiFraction = "gpu-fraction";
inline constexpr std::string_view kKaiMemory = "gpu-memory";
inline constexpr std::string_view kKaiContainer = "gpu-fraction-container-name";
inline constexpr std::string_view kKaiGpu = "runai-gpu";
inline constexpr std::string_view kKaiReserveFor = "run.ai/reserve_for_gpu_index";
inline constexpr std::string_view kKaiGroupLabel = "runai-gpu-group";
inline constexpr std::string_view kGfdStrategy = "nvidia.com/gpu.sharing-strategy";  // node labels
inline constexpr std::string_view kGfdReplicas = "nvidia.com/gpu.replicas";
inline constexpr std::string_view kGfdMpsCapable = "nvidia.com/mps.capable";
inline constexpr size_t kMaxSharingValue = 64 * 1024;
// HAMi's container resources (pod spec, immutable once created: what its
// scheduler placed the pod by). Only these are kept from the spec.
inline constexpr std::string_view kHamiCores = "nvidia.com/gpucores";
inline constexpr std::string_view kHamiMem = "nvidia.com/gpumem";
inline constexpr std::string_view kHamiMemPercent = "nvidia.com/gpumem-percentage";
bool is_sharing_resource(std::string_view resource);

// Whether a pod annotation or label key is one sharing reads.
bool is_sharing_pod_key(std::string_view key);
// Whether a node label or annotation key is one sharing reads (GFD labels
// "nvidia.com/gpu.*", "nvidia.com/mig-*.replicas", "nvidia.com/mps.capable";
// HAMi's registration).
bool is_sharing_node_key(std::string_view key);

struct PodSharingFacts {
  std::string namespace_name, name, node_name;
  std::map<std::string, std::string> labels, annotations;  // the sharing keys only
  std::vector<std::string> containers;                      // spec.containers names, in order
  // Who wrote the sharing annotations and labels (metadata.managedFields).
  FieldOwnership owners;
  // When the pod was bound (status condition PodScheduled, lastTransitionTime).
  std::optional<int64_t> scheduled_at;
  // Per spec container (same order): the sharing resources of its limits,
  // else of its requests (kHamiCores, ...).
  std::vector<std::map<std::string, std::string>> container_resources;
};

// Whose records of fractions are trusted (record_trust.h): the managers
// (metadata.managedFields) the schedulers write them as. client-go names a
// client after its binary unless told otherwise: HAMi's scheduler extender
// runs as "scheduler"; KAI's scheduler and binder as "scheduler" and "binder".
struct RecordTrust {
  std::vector<std::string> hami_managers = {"scheduler", "hami-scheduler", "vgpu-scheduler-extender"};
  std::vector<std::string> kai_managers = {"binder", "scheduler", "kai-scheduler"};
};

// One device of a DRA ResourceSlice of this node.
struct SliceDevice {
  std::string driver, pool, device;
  std::string uuid;         // attribute "uuid" (GPU-... or MIG-...), "" when absent
  bool mig = false;         // attribute type "mig", or a MIG- uuid
  bool operator==(const SliceDevice&) const = default;
};

struct SharingFacts {
  std::string node_name;
  std::map<std::string, std::string> node_labels, node_annotations;  // the sharing keys only
  std::map<std::pair<std::string, std::string>, PodSharingFacts> pods;  // by (namespace, name)
  std::vector<SliceDevice> slice_devices;
  // Total memory per GPU UUID in MiB (the device plane), for memory fractions
  // when HAMi's node registration does not say.
  std::map<std::string, uint64_t> device_memory_mib;
  // Where KAI / Run:ai puts its reservation pods.
  std::string kai_reservation_namespace = "runai-reservation";
  RecordTrust trust;
};

}  // namespace gpuledger::kubernetes
