#pragma once
// The fleet outbox: the local store is the source of truth and the queue of
// what the fleet database (src/fleet) has not committed yet. Each window
// carries a marker (schema 8, windows.shipped): pending until the database
// committed it, then shipped; a window the database refused as conflicting
// with what it holds is marked refused, so the backlog behind it drains, and
// is never sent again (the log, gpuledger_fleet_db_errors_total{reason=
// "conflict"} and `gpuledger doctor` name it). Pending windows leave oldest
// first, by (start, id), so a backlog drains in order.
//
// Opening an outbox marks the store as one that ships (meta 'fleet_outbox'):
// retention (Store::delete_before) then keeps every window not yet shipped,
// and roll-ups never merge shipped with unshipped windows (store.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ledger/store.h"

namespace gpuledger::ledger {

class Outbox {
 public:
  enum class Mark { kPending = 0, kShipped = 1, kRefused = 2 };
  struct Pending {
    int64_t id = 0;  // the store's row id, for mark()
    WindowRecord window;
  };

  enum class Access { kShipping, kReadOnly };
  // kShipping marks the store as one that ships; kReadOnly only counts (a
  // read-only store, `gpuledger doctor`).
  explicit Outbox(const Store& store, Access access = Access::kShipping);
  // The oldest pending windows, at most `limit`, by (start, id).
  std::vector<Pending> next_batch(size_t limit) const;
  // Marks the windows in one transaction.
  void mark(const std::vector<int64_t>& ids, Mark mark);
  int64_t pending_count() const;
  int64_t refused_count() const;
  // The end of the oldest pending window (Unix seconds); nullopt: none pending.
  std::optional<int64_t> oldest_pending_end() const;
  // A time t such that the fleet database holds every stored window that
  // starts before t (none of them pending) and a later window is stored: the
  // periods that end by t are complete there (the fleet's roll-ups,
  // fleet/fleet_rollups.h). The earliest pending start or the latest stored
  // start, whichever is earlier; nullopt: no windows.
  std::optional<int64_t> complete_before() const;

 private:
  int64_t count(const char* sql) const;
  const Store& store_;
};

}  // namespace gpuledger::ledger
