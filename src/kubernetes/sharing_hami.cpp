// HAMi fractions: the scheduler's record of what it placed replaces the
// device plugin's ids, when the record can be trusted (sharing.h,
// record_trust.h); a refused one bills the whole device.
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

// Whether a device of the record gives the container no smaller a part than
// its resource requests (the pod spec: immutable, what HAMi placed it by).
// HAMi writes usedcores = nvidia.com/gpucores and usedmem = nvidia.com/gpumem
// (or the percentage of the device's memory; all of it when neither is asked).
bool within_request(const HamiDevice& d, const std::map<std::string, std::string>& res,
                    std::optional<uint64_t> total, std::string* why) {
  auto requested = [&](std::string_view key, uint64_t max) -> std::optional<std::optional<uint64_t>> {
    auto v = sharing_value(res, key);
    if (v.empty()) return std::optional<uint64_t>{};
    auto n = parse_bounded(v, 0, max);
    if (!n) return std::nullopt;  // present but unreadable
    return n;
  };
  auto cores = requested(kHamiCores, 100), mem = requested(kHamiMem, 16ull * 1024 * 1024),
       pct = requested(kHamiMemPercent, 100);
  if (!cores || !mem || !pct) {
    *why = "the container's GPU resource requests cannot be read";
    return false;
  }
  if (uint64_t want = cores->value_or(0); want > 0) {
    if (d.cores >= want) return true;  // the share is by cores
    *why = "record says " + std::to_string(d.cores) + "% of the cores, the pod asked for " + std::to_string(want) + "%";
    return false;
  }
  if (d.cores == 100) return true;
  if (d.cores != 0) {
    *why = "record says " + std::to_string(d.cores) + "% of the cores, the pod asked for no core limit";
    return false;
  }
  std::optional<uint64_t> want_mib;
  if (mem->value_or(0) > 0) want_mib = **mem;
  else if (total && pct->value_or(0) > 0) want_mib = *total * **pct / 100;
  else if (total && !pct->has_value()) want_mib = *total;
  if (want_mib && d.mem_mib < *want_mib) {
    *why = "record says " + std::to_string(d.mem_mib) + " MiB, the pod asked for " + std::to_string(*want_mib) + " MiB";
    return false;
  }
  return true;
}

}  // namespace

void resolve_hami(std::vector<GpuAllocation>& allocations, const SharingFacts& facts, SharingStats& stats) {
  const auto registered = parse_hami_node_register(sharing_value(facts.node_annotations, kHamiNodeRegister));
  for (const auto& [key, pod] : facts.pods) {
    std::string record = sharing_value(pod.annotations, kHamiAllocated);
    if (record.empty()) continue;
    auto of_pod = [&](const GpuAllocation& a) { return a.namespace_name == pod.namespace_name && a.pod == pod.name; };
    // Refused: each device the kubelet gave the pod is billed whole (a HAMi
    // slot id "<uuid>-<n>" as the device it is a slot of).
    auto refuse = [&](RefusalReason why, std::string detail) {
      stats.refuse({"hami", pod.namespace_name, pod.name, why, std::move(detail)});
      for (auto& a : allocations) {
        if (!of_pod(a) || a.share_basis != "whole" || a.device.sharing == Sharing::kReplicas) continue;
        a.device.uuid = hami_slot_device(a.device.uuid);
        a.mode = sharing_mode(a.device);
        set_refused_share(a);
      }
    };
    // A pod the kubelet gave nothing (not yet admitted, or elsewhere): its
    // record bills nobody, so it is neither used nor refused.
    if (std::none_of(allocations.begin(), allocations.end(), of_pod)) continue;
    auto node = sharing_value(pod.annotations, kHamiNode);
    auto placed = parse_hami_allocated(record);
    if (!placed || placed->size() > pod.containers.size()) {
      refuse(RefusalReason::kMalformed, "hami.io/vgpu-devices-allocated is not HAMi's format for this pod");
      continue;
    }
    if (sharing_value(pod.annotations, kHamiBindPhase) != "success" || node.empty() || node != pod.node_name ||
        (!facts.node_name.empty() && node != facts.node_name)) {
      refuse(RefusalReason::kNotBound, "not bound to this node by HAMi (bind-phase, vgpu-node)");
      continue;
    }
    std::string why;
    if (!written_only_by(pod, kHamiAllocated, false, facts.trust.hami_managers, &why)) {
      refuse(RefusalReason::kNotSchedulerWritten, why);
      continue;
    }
    // Every id the kubelet handed each container must name a device of the
    // record, or the whole record is refused.
    auto held_by = [&](const std::string& container) {
      return [&, container](const GpuAllocation& a) { return of_pod(a) && a.container == container && a.share_basis == "whole"; };
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
      // ... and every device of the record one the kubelet handed it.
      for (const auto& d : devices)
        matches = matches && std::any_of(allocations.begin(), allocations.end(),
                                         [&](const GpuAllocation& a) { return mine(a) && id_names(a.device_id, d.uuid); });
      matches = matches && held > 0;
    }
    if (!matches) {
      refuse(RefusalReason::kForeignDevice, "names devices the kubelet did not give its containers");
      continue;
    }
    bool requested = true;
    for (size_t i = 0; i < placed->size() && requested; ++i)
      for (const auto& d : (*placed)[i]) {
        const auto& res = i < pod.container_resources.size() ? pod.container_resources[i] : std::map<std::string, std::string>{};
        requested = requested && within_request(d, res, total_mib(facts, registered, d.uuid), &why);
      }
    if (!requested) {
      refuse(RefusalReason::kBelowRequest, why);
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
