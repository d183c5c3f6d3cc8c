#pragma once
// The windows of the batch a shipper's round has just shipped, by store row
// id, for the roll-ups of the hours that batch completed, built in the same
// round: an hour whose windows are all here is merged from them instead of
// read from the store again (that read was about a fifth of a shipper's CPU
// through a backlog: docs/performance.md). A window is used only while its
// row still holds the slot, start and end it was shipped with (the store
// merged or replaced none of them since: ShippedDigests' rule), and only when
// every window the store lists for the hour is here; otherwise the hour is
// read from the store as before. Holds one batch, which the round held anyway.
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ledger/outbox.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

class ShippedBatch {
 public:
  void hold(std::vector<ledger::Outbox::Pending>&& batch);
  void clear() { windows_.clear(); }
  // The windows `keys` names (as Store::window_keys lists an hour), taken
  // from the batch in Store::windows_with_ids' order; nullopt, taking none,
  // when any of them is not here as it is stored.
  std::optional<std::vector<std::pair<int64_t, ledger::WindowRecord>>> take(
      const std::vector<ledger::Store::WindowKey>& keys);

 private:
  std::unordered_map<int64_t, ledger::WindowRecord> windows_;
};

}  // namespace gpuledger::fleet
