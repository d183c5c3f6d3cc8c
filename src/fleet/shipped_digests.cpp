#include "fleet/shipped_digests.h"

#include <functional>

namespace gpuledger::fleet {

ShippedDigests::Entry ShippedDigests::entry_of(const ledger::WindowRecord& w, uint64_t part) {
  return {w.start, w.end, std::hash<std::string>{}(w.slot.uuid), part};
}

void ShippedDigests::keep(int64_t id, const ledger::WindowRecord& w, uint64_t part) {
  if (entries_.size() >= kMaxEntries && !entries_.count(id)) entries_.clear();
  entries_[id] = entry_of(w, part);
}

std::optional<uint64_t> ShippedDigests::take(int64_t id, const ledger::WindowRecord& w) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  const Entry kept = it->second, now = entry_of(w, 0);
  entries_.erase(it);
  if (kept.start != now.start || kept.end != now.end || kept.slot != now.slot) return std::nullopt;
  return kept.part;
}

}  // namespace gpuledger::fleet
