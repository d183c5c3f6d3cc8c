#pragma once
// What a device id handed out by a GPU device plugin says about the physical
// GPU behind it. Pure functions, no I/O.
//
//   id form                       uuid label                    sharing
//   GPU-<uuid>                    GPU-<uuid>                    exclusive (replicas under nvidia.com/gpu.shared)
//   GPU-<uuid>::<n>               GPU-<uuid>                    replicas  (time-slicing / MPS replica n)
//   MIG-<uuid>                    MIG-<uuid> (the MIG device's own UUID; the parent is not in the id)
//                                                               mig
//   MIG-GPU-<uuid>/<gi>/<ci>      GPU-<uuid> (the parent GPU)   mig       (instance "<gi>/<ci>")
//   nvidia<N>                     nvidia<N> (GKE: no UUID in the id; the device name stands in)
//                                                               exclusive
//   nvidia<N>/gi<G>               nvidia<N>                     mig       (instance "gi<G>")
//   nvidia<N>/vgpu<V>             nvidia<N>                     replicas
//   nvidia<N>/gi<G>/vgpu<V>       nvidia<N>                     replicas  (a time-shared MIG instance)
//   anything else (extra resources) the id itself               exclusive
// Any of the forms with a trailing "::<n>" is a replica of that form.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::kubernetes {

enum class Sharing { kExclusive, kReplicas, kMig };
std::string_view to_string(Sharing sharing);  // "exclusive", "replicas", "mig"

struct GpuDevice {
  std::string uuid;          // the physical GPU (or MIG device) the id resolves to, see above
  std::string mig_instance;  // "<gi>/<ci>", "gi<G>", or "" when not a MIG slice or not in the id
  Sharing sharing = Sharing::kExclusive;
  bool operator==(const GpuDevice&) const = default;
};

// How an admin names the sharing a device id shows: "exclusive", "time-slicing"
// (replicas; MPS replicas look the same in the id), "mig".
std::string sharing_mode(const GpuDevice& device);

// nullopt for an id that cannot be a device (empty, whitespace, control bytes).
std::optional<GpuDevice> parse_device_id(std::string_view resource_name, std::string_view device_id);

// The device a replica id stands for: the id without its trailing "::<n>" and
// without a GKE "/vgpu<V>" part ("GPU-x::3" -> "GPU-x", "nvidia1/gi2/vgpu0" ->
// "nvidia1/gi2"). Replicas with the same base are slots of one device.
std::string replica_base(std::string_view device_id);

// nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*, or one of `extra`.
bool is_gpu_resource(std::string_view resource_name, const std::vector<std::string>& extra);

}  // namespace gpuledger::kubernetes
