// DRA devices: a UUID from the node's ResourceSlices when the device's names
// carry none, and a claim shared by several pod containers split among them.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "kubernetes/sharing.h"

namespace gpuledger::kubernetes {
namespace {

using Holder = std::tuple<std::string, std::string, std::string>;  // namespace, pod, container
using ClaimKey = std::tuple<std::string, std::string, std::string, std::string>;  // claim ns, name, driver, device id

std::string device_id_of(const ClaimDevice& c) { return c.pool_name + "/" + c.device_name; }

}  // namespace

void resolve_dra(std::vector<GpuAllocation>& allocations, const std::vector<PodAllocation>& pods,
                 const SharingFacts& facts, const AllocationOptions& options) {
  auto is_dra = [&](const std::string& driver) {
    return std::find(options.dra_drivers.begin(), options.dra_drivers.end(), driver) != options.dra_drivers.end();
  };
  // Which claims each (holder, driver, device) came through, and who uses each claim's device.
  std::map<std::tuple<Holder, std::string, std::string>, std::set<ClaimKey>> claims_of;
  std::map<ClaimKey, std::set<Holder>> users;
  for (const auto& pod : pods)
    for (const auto& c : pod.containers)
      for (const auto& d : c.dynamic) {
        if (!is_dra(d.driver_name) || d.device_name.empty()) continue;
        Holder h{pod.namespace_name, pod.name, c.name};
        ClaimKey k{d.claim_namespace, d.claim_name, d.driver_name, device_id_of(d)};
        claims_of[{h, d.driver_name, device_id_of(d)}].insert(k);
        users[k].insert(h);
      }

  for (auto& a : allocations) {
    if (!is_dra(a.resource)) continue;
    if (a.device.uuid.empty()) {
      auto slash = a.device_id.rfind('/');
      std::string pool = a.device_id.substr(0, slash), name = a.device_id.substr(slash + 1);
      for (const auto& s : facts.slice_devices)
        if (s.driver == a.resource && s.pool == pool && s.device == name && !s.uuid.empty()) {
          a.device.uuid = s.uuid;
          if (s.mig) a.device.sharing = Sharing::kMig;
        }
    }
    size_t n = 1;
    auto it = claims_of.find({Holder{a.namespace_name, a.pod, a.container}, a.resource, a.device_id});
    if (it != claims_of.end())
      for (const auto& k : it->second) n = std::max(n, users[k].size());
    a.share = 1.0 / static_cast<double>(n);
    a.share_basis = "claim";
    a.mode = n > 1 ? "dra-shared" : "dra";
  }
}

}  // namespace gpuledger::kubernetes
