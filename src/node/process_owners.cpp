#include "node/process_owners.h"

namespace gpuledger::node {

ProcessOwners::ProcessOwners(const attribution::AttributionSnapshot& snapshot) {
  for (const auto& v : snapshot.workloads)
    for (const auto& p : v.processes) live_.emplace(p.pid, &v);
  for (const auto& o : snapshot.other_processes)
    if (!o.account.empty()) others_.emplace(o.pid, &o);
}

std::optional<ProcessOwners::Owner> ProcessOwners::of(uint32_t pid, unsigned long long last) const {
  if (auto v = live_.find(pid); v != live_.end()) return Owner{v->second->workload.id, v->second->infrastructure};
  const attribution::ProcessOwner* best = nullptr;
  auto [from, to] = others_.equal_range(pid);
  for (auto it = from; it != to; ++it) {
    const auto& o = *it->second;
    const bool started_before = o.from_us == 0 || last == 0 || o.from_us <= last + kSlackUs;
    const bool ran_then = o.until_us == 0 || last == 0 || last <= o.until_us + kSlackUs;
    if (!started_before || !ran_then) continue;
    if (!best || o.from_us > best->from_us) best = &o;  // of two that fit, the later life
  }
  if (!best) return std::nullopt;
  return Owner{best->account, best->infrastructure};
}

}  // namespace gpuledger::node
