// Replicas of one device (time-slicing, MPS, time-shared MIG) held by one
// container become one entry whose share is slots held / slots advertised.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "kubernetes/hami_annotations.h"
#include "kubernetes/sharing.h"

namespace gpuledger::kubernetes {
namespace {

bool is_dra(const GpuAllocation& a, const AllocationOptions& options) {
  return std::find(options.dra_drivers.begin(), options.dra_drivers.end(), a.resource) != options.dra_drivers.end();
}

// The GFD label that says how many replicas each device of a resource has.
std::string replicas_label(const std::string& resource) {
  if (resource == "nvidia.com/gpu" || resource == "nvidia.com/gpu.shared") return std::string(kGfdReplicas);
  if (resource.rfind("nvidia.com/mig-", 0) == 0) return resource + ".replicas";
  return "";
}

std::string label(const SharingFacts& facts, const std::string& key) {
  auto it = facts.node_labels.find(key);
  return it == facts.node_labels.end() ? "" : it->second;
}

bool mps_node(const SharingFacts& facts) {
  return label(facts, std::string(kGfdStrategy)) == "mps" || label(facts, std::string(kGfdMpsCapable)) == "true";
}

}  // namespace

void resolve_replicas(std::vector<GpuAllocation>& allocations, const std::vector<ContainerDevices>* allocatable,
                      const SharingFacts& facts, const AllocationOptions& options) {
  // Slots the node advertises per (resource, device).
  std::map<std::pair<std::string, std::string>, std::set<std::string>> advertised;
  if (allocatable)
    for (const auto& devs : *allocatable)
      for (const auto& id : devs.device_ids) advertised[{devs.resource_name, replica_base(id)}].insert(id);

  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, std::vector<GpuAllocation>> groups;
  std::vector<GpuAllocation> out;
  for (auto& a : allocations) {
    if (a.share_basis != "whole" || is_dra(a, options) || a.device.sharing != Sharing::kReplicas) {
      out.push_back(std::move(a));
      continue;
    }
    groups[{a.namespace_name, a.pod, a.container, a.resource, replica_base(a.device_id)}].push_back(std::move(a));
  }
  for (auto& [key, held] : groups) {
    const auto& [ns, pod, container, resource, base] = key;
    GpuAllocation m = held.front();
    std::set<std::string> ids;
    for (const auto& h : held) ids.insert(h.device_id);
    m.device_id.clear();
    for (const auto& id : ids) m.device_id += (m.device_id.empty() ? "" : ",") + id;
    // The device behind the replicas: a MIG instance stays one (the ledger's slot).
    auto base_dev = parse_device_id(resource, base);
    bool mig = base_dev && base_dev->sharing == Sharing::kMig;
    if (mig) m.device.sharing = Sharing::kMig;
    m.mode = mps_node(facts) ? "mps" : mig ? "mig-time-slicing" : "time-slicing";
    uint64_t slots = 0;
    if (auto it = advertised.find({resource, base}); it != advertised.end()) slots = it->second.size();
    if (!slots)
      if (auto key_label = replicas_label(resource); !key_label.empty())
        slots = parse_bounded(label(facts, key_label), 1, 4096).value_or(0);
    m.share_basis = "replicas";
    if (slots) {
      m.share = std::min(1.0, static_cast<double>(ids.size()) / static_cast<double>(slots));
    } else {
      m.share = 1.0;
      m.share_known = false;
    }
    out.push_back(std::move(m));
  }
  allocations = std::move(out);
}

}  // namespace gpuledger::kubernetes
