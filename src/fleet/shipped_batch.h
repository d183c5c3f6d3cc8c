#pragma once
// The windows of the batch a shipper's round has just shipped, by store row
// id, for the roll-ups of the hours that batch completed, built in the same
// round: an hour whose windows are all here is merged from them instead of
// read from the store again (that read was about a fifth of a shipper's CPU
// through a backlog: docs/performance.md). A window is used only while its
// row still holds the slot, start and end it was shipped with (the store
// merged or replaced none of them since: ShippedDigests' rule), and only when
// every window the store lists for the hour is here; otherwise the hour is
// read from the store as before. What the last round's roll-ups left (the
// first minutes of an hour that this batch ends: with batches of 4,000
// windows, one hour in eight of a backlog's) is kept beside this batch for
// one more round, so those hours are not read again either (5 % of a
// shipper's CPU in `perf`). Holds at most two batches.
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
  // This round's batch; of the last round's, what no roll-up took is kept
  // for this round, and the rest of earlier rounds' dropped.
  void hold(std::vector<ledger::Outbox::Pending>&& batch);
  // The windows `keys` names (as Store::window_keys lists an hour), taken
  // from the batch in Store::windows_with_ids' order; nullopt, taking none,
  // when any of them is not here as it is stored.
  std::optional<std::vector<std::pair<int64_t, ledger::WindowRecord>>> take(
      const std::vector<ledger::Store::WindowKey>& keys);

 private:
  using Windows = std::unordered_map<int64_t, ledger::WindowRecord>;
  // Which of the two holds row k.id as `k` names it; none when neither does.
  Windows* holder(const ledger::Store::WindowKey& k);
  Windows windows_, earlier_;  // this round's batch; what the last round's roll-ups left
};

}  // namespace gpuledger::fleet
