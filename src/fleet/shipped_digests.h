#pragma once
// The digest parts (fleet_rows.h) of the windows a shipper has just shipped,
// by the store's row id, for the hour roll-ups that sum them next. Without
// it an hour's roll-up hashed each of its windows again (window_digest: a
// canonical text of every value, then SHA-256), ~15 % of a shipper's CPU
// with a backlog (docs/performance.md, "Schema 14"). A part is taken once;
// one kept for a row id whose window has another slot, start or end (the
// store merged or replaced it since) is not used, and the window is hashed
// as before. The parts are those of the windows as this session's origin
// ships them: the cache belongs to one shipper's session. Bounded: past
// kMaxEntries it starts again from empty (those windows are hashed again).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "ledger/store.h"

namespace gpuledger::fleet {

class ShippedDigests {
 public:
  static constexpr size_t kMaxEntries = 100'000;  // ~6 MB; a day of a 64-GPU node
  // The part of window `w` (store row `id`), as shipped.
  void keep(int64_t id, const ledger::WindowRecord& w, uint64_t part);
  // The part kept for row `id` when it is still window `w`'s, once.
  std::optional<uint64_t> take(int64_t id, const ledger::WindowRecord& w);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    int64_t start = 0, end = 0;
    size_t slot = 0;  // a hash of the slot's uuid
    uint64_t part = 0;
  };
  static Entry entry_of(const ledger::WindowRecord& w, uint64_t part);
  std::unordered_map<int64_t, Entry> entries_;
};

}  // namespace gpuledger::fleet
