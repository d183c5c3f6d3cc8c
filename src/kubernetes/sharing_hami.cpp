// HAMi fractions: the scheduler's record of what it placed replaces the
// device plugin's ids, when the record can be trusted (sharing.h).
#include <algorithm>
#include <set>

#include "kubernetes/hami_annotations.h"
#include "kubernetes/sharing.h"

namespace gpuledger::kubernetes {
namespace {

// The plugin's id names this device: the UUID itself, or a HAMi / NVIDIA
// replica of it ("<uuid>-<n>", "<uuid>::<n>").
bool id_names(const std::string& id, const std::string& uuid) {
  return id == uuid || id.rfind(uuid + "-", 0) == 0 || id.rfind(uuid + "::", 0) == 0;
}

std::optional<uint64_t> total_mib(const SharingFacts& facts, const std::map<std::string, uint64_t>& registered,
                                  const std::string& uuid) {
  if (auto it = registered.find(uuid); it != registered.end()) return it->second;
  if (auto it = facts.device_memory_mib.find(uuid); it != facts.device_memory_mib.end() && it->second > 0)
    return it->second;
  return std::nullopt;
}

}  // namespace

void resolve_hami(std::vector<GpuAllocation>& allocations, const SharingFacts& facts, SharingStats& stats) {
  const auto registered = parse_hami_node_register(sharing_value(facts.node_annotations, kHamiNodeRegister));
  for (const auto& [key, pod] : facts.pods) {
    std::string record = sharing_value(pod.annotations, kHamiAllocated);
    if (record.empty()) continue;
    auto node = sharing_value(pod.annotations, kHamiNode);
    auto placed = parse_hami_allocated(record);
    bool trusted = placed && sharing_value(pod.annotations, kHamiBindPhase) == "success" && !node.empty() &&
                   node == pod.node_name && (facts.node_name.empty() || node == facts.node_name) &&
                   placed->size() <= pod.containers.size();
    if (!trusted) {
      ++stats.refused_annotations;
      continue;
    }
    // Every id the kubelet handed each container must name a device of the
    // record, or the whole record is refused.
    auto held_by = [&](const std::string& container) {
      return [&, container](const GpuAllocation& a) {
        return a.namespace_name == pod.namespace_name && a.pod == pod.name && a.container == container &&
               a.share_basis == "whole";
      };
    };
    bool matches = true;
    std::vector<std::string> resources(placed->size());
    for (size_t i = 0; i < placed->size() && matches; ++i) {
      const auto& devices = (*placed)[i];
      if (devices.empty()) continue;
      auto mine = held_by(pod.containers[i]);
      size_t held = 0;
      for (const auto& a : allocations) {
        if (!mine(a)) continue;
        ++held;
        resources[i] = a.resource;
        matches = matches && std::any_of(devices.begin(), devices.end(),
                                         [&](const HamiDevice& d) { return id_names(a.device_id, d.uuid); });
      }
      matches = matches && held > 0;
    }
    if (!matches) {
      ++stats.refused_annotations;
      continue;
    }
    for (size_t i = 0; i < placed->size(); ++i) {
      if ((*placed)[i].empty()) continue;
      std::erase_if(allocations, held_by(pod.containers[i]));
      for (const auto& d : (*placed)[i]) {
        GpuAllocation a;
        a.namespace_name = pod.namespace_name;
        a.pod = pod.name;
        a.container = pod.containers[i];
        a.resource = resources[i];
        a.device_id = d.uuid;
        a.device = {d.uuid, "", d.uuid.rfind("MIG-", 0) == 0 ? Sharing::kMig : Sharing::kExclusive};
        a.mode = "fraction";
        if (d.cores > 0) {
          a.share = d.cores / 100.0;
          a.share_basis = "cores";
        } else {
          set_memory_share(a, d.mem_mib, total_mib(facts, registered, d.uuid));
        }
        allocations.push_back(std::move(a));
      }
    }
  }
}

}  // namespace gpuledger::kubernetes
