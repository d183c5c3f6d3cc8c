// The store's hourly roll-up (hourly_rollup.h) of windows older than the cutoff.
#include "ledger/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store_sqlite.h"

namespace gpuledger::ledger {

using detail::Stmt;

namespace {
// The outbox (ledger/outbox.h) and roll-ups: windows already in the fleet
// database merge into a window marked shipped (the database holds its parts),
// windows not yet shipped into one that is not; a mix is left as it is until
// the rest has shipped, so no part is sent twice or never.
std::set<int64_t> shipped_ids(sqlite3* db, int64_t from, int64_t to, const Store& store) {
  std::set<int64_t> ids;
  Stmt q(db, "SELECT id FROM windows WHERE start >= ? AND start < ? AND shipped != 0", store);
  q.bind(1, from).bind(2, to);
  while (q.step()) ids.insert(q.i64(0));
  return ids;
}
bool same_outbox_state(const std::vector<std::pair<int64_t, WindowRecord>>& group, const std::set<int64_t>& shipped) {
  const bool first = shipped.count(group.front().first) > 0;
  return std::all_of(group.begin(), group.end(), [&](const auto& g) { return (shipped.count(g.first) > 0) == first; });
}
void mark_rolled_up_shipped(sqlite3* db, const WindowRecord& merged, const Store& store) {
  Stmt u(db, "UPDATE windows SET shipped = 1 WHERE start = ? AND gpu_uuid = ?", store);
  u.bind(1, merged.start).bind(2, merged.slot.uuid);
  u.step();
}
}  // namespace

int64_t Store::roll_up_before(int64_t cutoff, int max_days) {
  const int64_t end = cutoff / kRollupSeconds * kRollupSeconds;
  Stmt next(db_, "SELECT min(start) FROM windows WHERE start >= ? AND start < ? AND end - start < ?", *this);
  int64_t merged_away = 0, lo = INT64_MIN;
  // A day at a time: memory stays bounded on a store that was never rolled up.
  for (int days = 0; days < max_days; ++days) {
    next.reset();
    next.bind(1, lo).bind(2, end).bind(3, kRollupSeconds);
    if (!next.step() || next.null(0)) break;
    const int64_t day = next.i64(0) / kRollupSeconds * kRollupSeconds;
    const int64_t day_end = std::min(end, day + 24 * kRollupSeconds);
    using Key = std::tuple<int64_t, std::string, std::string, double>;  // hour, slot, currency, fraction
    std::map<Key, std::vector<std::pair<int64_t, WindowRecord>>> hours;
    const std::set<int64_t> shipped = shipped_ids(db_, day, day_end, *this);
    for_each_window_with_id(day, day_end, [&](int64_t id, WindowRecord&& w) {
      if (w.end - w.start >= kRollupSeconds) return;
      Key k{w.start / kRollupSeconds, w.slot.uuid, w.currency, w.gpu_fraction};
      hours[k].emplace_back(id, std::move(w));
    });
    exec("BEGIN IMMEDIATE");
    try {
      Stmt del(db_, "DELETE FROM windows WHERE id = ?", *this);
      for (auto& [key, group] : hours) {
        if (group.size() < 2 || !same_outbox_state(group, shipped)) continue;
        std::sort(group.begin(), group.end(),
                  [](const auto& x, const auto& y) { return x.second.start < y.second.start; });
        std::vector<WindowRecord> ws;
        for (auto& [id, w] : group) {
          del.bind(1, id);
          del.step();
          del.reset();
          ws.push_back(std::move(w));
        }
        WindowRecord merged = merge_windows(ws);
        check_charges(merged);
        if (!insert_window_in_transaction(merged)) fail("roll-up: hour " + std::to_string(merged.start) + " clashes");
        if (shipped.count(group.front().first)) mark_rolled_up_shipped(db_, merged, *this);
        merged_away += static_cast<int64_t>(ws.size()) - 1;
      }
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    lo = day_end;
  }
  return merged_away;
}

}  // namespace gpuledger::ledger
