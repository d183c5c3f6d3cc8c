#include "fleet/shipped_batch.h"

namespace gpuledger::fleet {

void ShippedBatch::hold(std::vector<ledger::Outbox::Pending>&& batch) {
  earlier_ = std::move(windows_);
  windows_.clear();
  for (auto& p : batch) windows_.insert_or_assign(p.id, std::move(p.window));
}

ShippedBatch::Windows* ShippedBatch::holder(const ledger::Store::WindowKey& k) {
  for (Windows* held : {&windows_, &earlier_}) {
    const auto it = held->find(k.id);
    if (it == held->end()) continue;
    const auto& w = it->second;
    return w.slot.uuid == k.uuid && w.start == k.start && w.end == k.end ? held : nullptr;
  }
  return nullptr;
}

std::optional<std::vector<std::pair<int64_t, ledger::WindowRecord>>> ShippedBatch::take(
    const std::vector<ledger::Store::WindowKey>& keys) {
  if (keys.empty()) return std::nullopt;
  std::vector<Windows*> holders;  // each key's, found once
  holders.reserve(keys.size());
  for (const auto& k : keys) {
    holders.push_back(holder(k));
    if (!holders.back()) return std::nullopt;
  }
  std::vector<std::pair<int64_t, ledger::WindowRecord>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i)
    out.emplace_back(keys[i].id, std::move(holders[i]->extract(keys[i].id).mapped()));
  ledger::Store::sort_by_start_and_gpu(out);
  return out;
}

}  // namespace gpuledger::fleet
