#pragma once
// HAMi's scheduler records, parsed strictly (a pod's annotations are hostile
// input: anything malformed is refused whole, never half-read).
//
//   pod  hami.io/vgpu-devices-allocated: per container (spec order) separated
//        by ';', devices within a container by ':', each device
//        "<UUID>,<type>,<usedmem MiB>,<usedcores percent>", e.g.
//        "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,30:;"
//   node hami.io/node-nvidia-register: the node's devices, either JSON
//        [{"id":"GPU-...","count":10,"devmem":81920,"devcore":100,...}] or the
//        older "GPU-...,10,81920,100,NVIDIA-A100,0,true:GPU-...,..." form.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::kubernetes {

struct HamiDevice {
  std::string uuid, type;
  uint64_t mem_mib = 0;
  unsigned cores = 0;  // percent of the device's SMs, 0 = no core limit
  bool operator==(const HamiDevice&) const = default;
};

// Per container, in spec order; nullopt for anything malformed.
std::optional<std::vector<std::vector<HamiDevice>>> parse_hami_allocated(std::string_view value);

// UUID -> total memory in MiB; entries that cannot be read are left out.
std::map<std::string, uint64_t> parse_hami_node_register(std::string_view value);

// A GPU or MIG UUID as device plugins write it: "GPU-"/"MIG-" then
// [0-9A-Za-z-/], at most 128 bytes.
bool is_gpu_uuid(std::string_view s);
// The device a HAMi device-plugin slot id stands for: "GPU-<uuid>-<n>" (a
// UUID in NVIDIA's 8-4-4-4-12 hex form, then the slot number) -> "GPU-<uuid>";
// any other id unchanged.
std::string hami_slot_device(const std::string& id);
// Decimal digits only, at most 12, within [min, max].
std::optional<uint64_t> parse_bounded(std::string_view s, uint64_t min, uint64_t max);

}  // namespace gpuledger::kubernetes
