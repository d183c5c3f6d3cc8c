// KAI scheduler / Run:ai fractions: the reservation pod holds the GPU; the
// pods of its GPU group hold fractions of it (sharing.h).
#include <algorithm>
#include <map>

#include "kubernetes/hami_annotations.h"
#include "kubernetes/sharing.h"

namespace gpuledger::kubernetes {
namespace {

// A label value as Kubernetes allows it: at most 63 of [A-Za-z0-9._-].
bool is_label_value(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

// "0.5", "1", "1.0", ".25": a decimal in (0, 1] with at most 6 decimals.
std::optional<double> parse_gpu_fraction(std::string_view s) {
  if (s.empty() || s.size() > 8) return std::nullopt;
  size_t dot = s.find('.');
  auto whole = s.substr(0, dot);
  auto frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.size() > 1 || (dot != std::string_view::npos && (frac.empty() || frac.size() > 6))) return std::nullopt;
  if (whole.empty() && frac.empty()) return std::nullopt;
  uint64_t num = whole.empty() ? 0 : static_cast<uint64_t>(whole[0] - '0');
  if (!whole.empty() && (whole[0] < '0' || whole[0] > '1')) return std::nullopt;
  uint64_t den = 1;
  for (char c : frac) {
    if (c < '0' || c > '9') return std::nullopt;
    num = num * 10 + static_cast<uint64_t>(c - '0');
    den *= 10;
  }
  if (num == 0 || num > den) return std::nullopt;
  return static_cast<double>(num) / static_cast<double>(den);
}

void resolve_kai(std::vector<GpuAllocation>& allocations, const std::vector<PodAllocation>& pods,
                 const SharingFacts& facts, SharingStats& stats) {
  const std::string& reservation_ns = facts.kai_reservation_namespace;
  if (reservation_ns.empty()) return;
  // The devices each GPU group's reservation pods hold. Reservation pods are
  // never holders: the GPU's unallocated rest is nobody's.
  std::map<std::string, std::vector<std::pair<GpuAllocation, std::string>>> reserved;  // group -> (device, gpu index)
  for (const auto& a : allocations) {
    if (a.namespace_name != reservation_ns) continue;
    auto pf = facts.pods.find({a.namespace_name, a.pod});
    if (pf == facts.pods.end()) continue;
    auto group = sharing_value(pf->second.labels, kKaiGroupLabel);
    if (is_label_value(group)) reserved[group].push_back({a, sharing_value(pf->second.annotations, kKaiReserveFor)});
  }
  std::erase_if(allocations, [&](const GpuAllocation& a) { return a.namespace_name == reservation_ns; });

  for (const auto& pod : pods) {
    if (pod.namespace_name == reservation_ns || pod.containers.empty()) continue;
    auto pf = facts.pods.find({pod.namespace_name, pod.name});
    if (pf == facts.pods.end()) continue;
    const auto& f = pf->second;
    auto group = sharing_value(f.labels, kKaiGroupLabel);
    auto res = reserved.find(group);
    if (group.empty() || res == reserved.end()) continue;
    // The container the fraction is for: the one named, else the first.
    std::string first = f.containers.empty() ? pod.containers.front().name : f.containers.front();
    std::string container = first;
    if (auto named = sharing_value(f.annotations, kKaiContainer); !named.empty()) container = named;
    bool listed = std::any_of(pod.containers.begin(), pod.containers.end(),
                              [&](const ContainerAllocation& c) { return c.name == container; });
    auto fraction = parse_gpu_fraction(sharing_value(f.annotations, kKaiFraction));
    auto memory = parse_bounded(sharing_value(f.annotations, kKaiMemory), 1, 16ull * 1024 * 1024);
    auto gpu = sharing_value(f.annotations, kKaiGpu);
    // Why the record cannot be trusted, if it cannot (record_trust.h): the
    // group label is KAI's to write, the fraction the author's at creation
    // and nobody's but KAI's after the pod was scheduled.
    std::optional<RefusedRecord> refused;
    auto refuse = [&](RefusalReason why, std::string detail) {
      if (!refused) refused = RefusedRecord{"kai", pod.namespace_name, pod.name, why, std::move(detail)};
    };
    std::string why;
    if (!listed) refuse(RefusalReason::kUnknownContainer, "gpu-fraction-container-name names no container of the pod");
    if (!fraction && !memory) refuse(RefusalReason::kMalformed, "neither gpu-fraction nor gpu-memory can be read");
    if (!written_only_by(f, kKaiGroupLabel, true, facts.trust.kai_managers, &why))
      refuse(RefusalReason::kNotSchedulerWritten, why);
    for (auto k : {kKaiFraction, kKaiMemory, kKaiContainer, kKaiGpu})
      if (f.annotations.count(std::string(k)) && !unchanged_since_scheduling(f, k, facts.trust.kai_managers, &why))
        refuse(RefusalReason::kChangedAfterScheduling, why);
    for (const auto& [device, index] : res->second)
      if (!gpu.empty() && !index.empty() && gpu != index)
        refuse(RefusalReason::kInconsistent, "runai-gpu disagrees with the reservation's GPU");
    if (refused) stats.refuse(*refused);
    for (const auto& [device, index] : res->second) {
      GpuAllocation a = device;
      a.namespace_name = pod.namespace_name;
      a.pod = pod.name;
      a.container = listed ? container : first;  // a refused record still holds: billed whole
      a.mode = "fraction";
      if (refused) {
        set_refused_share(a);
      } else if (fraction) {
        a.share = *fraction;
        a.share_basis = "fraction";
      } else {
        auto total = facts.device_memory_mib.find(device.device.uuid);
        set_memory_share(a, *memory, total == facts.device_memory_mib.end() ? std::nullopt
                                                                           : std::optional<uint64_t>(total->second));
      }
      allocations.push_back(std::move(a));
    }
  }
}

}  // namespace gpuledger::kubernetes
