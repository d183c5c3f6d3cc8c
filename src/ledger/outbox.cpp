#include "ledger/outbox.h"

#include <sqlite3.h>

#include <algorithm>
#include <set>

#include "common/error.h"

namespace gpuledger::ledger {

namespace {

// One prepared statement, finalized on every path.
struct Query {
  Query(sqlite3* db, const char* sql, const Store& store) : db(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK)
      throw Error("ledger store " + store.path() + ": outbox: " + sqlite3_errmsg(db));
  }
  ~Query() { sqlite3_finalize(s); }
  bool step() {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("ledger store outbox: ") + sqlite3_errmsg(db));
  }
  sqlite3* db;
  sqlite3_stmt* s = nullptr;
};

}  // namespace

Outbox::Outbox(const Store& store, Access access) : store_(store) {
  if (access == Access::kShipping) store_.exec("INSERT OR IGNORE INTO meta(key, value) VALUES('fleet_outbox', '1')");
}

std::vector<Outbox::Pending> Outbox::next_batch(size_t limit) const {
  std::vector<Pending> out;
  if (limit == 0) return out;
  Query q(store_.db_, "SELECT id, start FROM windows WHERE shipped = 0 ORDER BY start, id LIMIT ?", store_);
  sqlite3_bind_int64(q.s, 1, static_cast<int64_t>(limit));
  std::set<int64_t> ids;
  int64_t first = 0, last = 0;
  while (q.step()) {
    const int64_t start = sqlite3_column_int64(q.s, 1);
    if (ids.empty()) first = start;
    last = start;
    ids.insert(sqlite3_column_int64(q.s, 0));
  }
  if (ids.empty()) return out;
  store_.for_each_window_with_id(first, last + 1, [&](int64_t id, WindowRecord&& w) {
    if (ids.count(id)) out.push_back({id, std::move(w)});
  });
  std::sort(out.begin(), out.end(), [](const Pending& a, const Pending& b) {
    return a.window.start != b.window.start ? a.window.start < b.window.start : a.id < b.id;
  });
  return out;
}

// A batch's ids are mostly one run (the windows stored one after another):
// one UPDATE a run of consecutive ids, where one a window was 9 % of a fleet
// shipper's CPU in `perf`.
void Outbox::mark(const std::vector<int64_t>& ids, Mark mark) {
  if (ids.empty()) return;
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  store_.exec("BEGIN IMMEDIATE");
  try {
    Query u(store_.db_, "UPDATE windows SET shipped = ? WHERE id BETWEEN ? AND ?", store_);
    for (size_t first = 0; first < sorted.size();) {
      size_t last = first;
      while (last + 1 < sorted.size() && sorted[last + 1] <= sorted[last] + 1) ++last;
      sqlite3_reset(u.s);
      sqlite3_bind_int(u.s, 1, static_cast<int>(mark));
      sqlite3_bind_int64(u.s, 2, sorted[first]);
      sqlite3_bind_int64(u.s, 3, sorted[last]);
      u.step();
      first = last + 1;
    }
    store_.exec("COMMIT");
  } catch (...) {
    sqlite3_exec(store_.db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int64_t Outbox::count(const char* sql) const {
  Query q(store_.db_, sql, store_);
  return q.step() ? sqlite3_column_int64(q.s, 0) : 0;
}

int64_t Outbox::pending_count() const { return count("SELECT count(*) FROM windows WHERE shipped = 0"); }
int64_t Outbox::refused_count() const { return count("SELECT count(*) FROM windows WHERE shipped = 2"); }

std::optional<int64_t> Outbox::oldest_pending_end() const {
  Query q(store_.db_, "SELECT end FROM windows WHERE shipped = 0 ORDER BY start, id LIMIT 1", store_);
  if (q.step()) return sqlite3_column_int64(q.s, 0);
  return std::nullopt;
}

std::optional<int64_t> Outbox::complete_before() const {
  Query latest(store_.db_, "SELECT max(start) FROM windows", store_);
  if (!latest.step() || sqlite3_column_type(latest.s, 0) == SQLITE_NULL) return std::nullopt;
  int64_t t = sqlite3_column_int64(latest.s, 0);
  Query pending(store_.db_, "SELECT min(start) FROM windows WHERE shipped = 0", store_);
  if (pending.step() && sqlite3_column_type(pending.s, 0) != SQLITE_NULL)
    t = std::min<int64_t>(t, sqlite3_column_int64(pending.s, 0));
  return t;
}

}  // namespace gpuledger::ledger
