#include "fleet/shipped_batch.h"

namespace gpuledger::fleet {

void ShippedBatch::hold(std::vector<ledger::Outbox::Pending>&& batch) {
  windows_.clear();
  for (auto& p : batch) windows_.insert_or_assign(p.id, std::move(p.window));
}

std::optional<std::vector<std::pair<int64_t, ledger::WindowRecord>>> ShippedBatch::take(
    const std::vector<ledger::Store::WindowKey>& keys) {
  if (keys.empty()) return std::nullopt;
  for (const auto& k : keys) {
    const auto it = windows_.find(k.id);
    if (it == windows_.end() || it->second.slot.uuid != k.uuid || it->second.start != k.start ||
        it->second.end != k.end)
      return std::nullopt;
  }
  std::vector<std::pair<int64_t, ledger::WindowRecord>> out;
  out.reserve(keys.size());
  for (const auto& k : keys) {
    const auto it = windows_.find(k.id);
    out.emplace_back(k.id, std::move(it->second));
    windows_.erase(it);
  }
  ledger::Store::sort_by_start_and_gpu(out);
  return out;
}

}  // namespace gpuledger::fleet
