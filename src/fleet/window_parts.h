#pragma once
// A window row's parts - its accounts, charges and energy parts, kept in its
// JSON body from schema 7 - for the fleet reader, which reads the bodies
// itself (canonical_window_json.h, on every core) and asks the database's
// views for the few it leaves. The views (accounts, charges, energy_charges)
// are what a window's parts are: a body the reader leaves (hand-written, a
// negative zero) is read as they read it, and every window's parts come in
// their order (by account, then kind: bytes, COLLATE "C").
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "fleet/canonical_window_json.h"
#include "fleet/pg_connection.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

// The parts the reader read, into the window, in the views' order.
void take_window_parts(WindowChildren&& parts, ledger::WindowRecord& window);

// The views' reading of the parts of some windows of a page of window rows
// (their key in columns 0-3): one statement for them all (the reader bounds
// how many bodies that is: kViewsBodyBytes).
class ViewsReading {
 public:
  ViewsReading(PgConnection& db, const PgResult& page, const std::vector<int>& rows);
  // Page row `row`'s parts into the window (a row not asked for: Error).
  void into(int row, ledger::WindowRecord& window) const;
  bool asked(int row) const { return std::binary_search(rows_.begin(), rows_.end(), row); }

 private:
  std::vector<int> rows_;  // asked for, ascending
  std::unique_ptr<PgResult> r_;
  std::vector<std::pair<int, int>> at_;  // page row, r_ row; sorted
};

}  // namespace gpuledger::fleet
