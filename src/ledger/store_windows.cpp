// The store's windows: written once with their accounts, charges and energy, read back streamed, summed, deleted.
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
#include <utility>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/device_quality.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store_sqlite.h"
#include "ledger/window_fields.h"

namespace gpuledger::ledger {

using detail::Stmt;

namespace {

// A window field's value as the store holds it (window_fields.h).
template <class T>
void bind_field(Stmt& s, int i, const T& v) {
  s.bind(i, v);
}
void bind_field(Stmt& s, int i, bool v) { s.bind(i, int64_t{v}); }
void bind_field(Stmt& s, int i, uint64_t v) { s.bind(i, static_cast<int64_t>(v)); }
void bind_field(Stmt& s, int i, const std::map<std::string, int64_t>& v) { s.bind(i, encode_findings(v)); }
template <class W, class T>
void bind_field(Stmt& s, int i, const Part<const W, T>& p) {  // no part: NULL
  if (p.whole)
    bind_field(s, i, (*p.whole).*p.member);
  else
    s.bind(i, std::optional<double>());
}

void read_field(const Stmt& s, int c, int64_t& v) { v = s.i64(c); }
void read_field(const Stmt& s, int c, double& v) { v = s.f64(c); }
void read_field(const Stmt& s, int c, bool& v) { v = s.i64(c) != 0; }
void read_field(const Stmt& s, int c, uint64_t& v) { v = static_cast<uint64_t>(s.i64(c)); }
void read_field(const Stmt& s, int c, std::optional<uint64_t>& v) { v = s.opt_bytes(c); }
void read_field(const Stmt& s, int c, std::optional<int64_t>& v) { v = s.opt_i64(c); }
void read_field(const Stmt& s, int c, std::string& v) { v = s.text(c); }
void read_field(const Stmt& s, int c, std::optional<double>& v) { v = s.opt(c); }
void read_field(const Stmt& s, int c, std::optional<std::string>& v) {
  v = s.null(c) ? std::nullopt : std::optional<std::string>(s.text(c));
}
void read_field(const Stmt& s, int c, std::map<std::string, int64_t>& v) { v = decode_findings(s.text(c)); }
template <class W, class T>
void read_field(const Stmt& s, int c, Part<W, T>&& p) {  // NULL: no part
  read_part(p, s.null(c), [&](T& v) { read_field(s, c, v); });
}

bool stored_in(const WindowField& f, StoreTable table) { return f.store && f.table == table; }

// The store columns of `table`'s fields, and "?" for each; a column added after
// `version` as what a store from before reads in its place.
std::pair<std::string, std::string> window_columns(StoreTable table, int version = kStoreSchemaVersion) {
  std::string columns, marks;
  const WindowRecord none;
  for_each_window_field(
      [&](const WindowField& f, auto&&) {
        if (!stored_in(f, table)) return;
        columns += (columns.empty() ? "" : ",") + std::string(version >= f.store_since ? f.store : f.store_before);
        marks += marks.empty() ? "?" : ",?";
      },
      none);
  return {columns, marks};
}

// Binds `table`'s fields of w from position `first` on.
void bind_window(Stmt& s, int first, StoreTable table, const WindowRecord& w) {
  int i = first;
  for_each_window_field(
      [&](const WindowField& f, auto&& v) {
        if (stored_in(f, table)) bind_field(s, i++, v);
      },
      w);
}

// Reads `table`'s fields into w from column `first` on.
void read_window(const Stmt& s, int first, StoreTable table, WindowRecord& w) {
  int c = first;
  for_each_window_field(
      [&](const WindowField& f, auto&& v) {
        if (stored_in(f, table)) read_field(s, c++, std::forward<decltype(v)>(v));
      },
      w);
}

// The accounts' store columns and "?" for each, as window_columns.
std::pair<std::string, std::string> account_columns(int version = kStoreSchemaVersion) {
  std::string columns, marks;
  const AccountRecord none;
  for_each_account_field(
      [&](const AccountField& f, auto&&) {
        columns += (columns.empty() ? "" : ",") + std::string(version >= f.store_since ? f.store : f.store_before);
        marks += marks.empty() ? "?" : ",?";
      },
      none);
  return {columns, marks};
}

}  // namespace

void Store::check_charges(const WindowRecord& w) const {
  int64_t sum = 0;
  for (const auto& c : w.charges) {
    if (c.micros < 0) fail("negative charge for " + c.account);
    sum += c.micros;
  }
  if (w.busy_micros + w.idle_micros + w.memory_micros != w.cost_micros)
    fail("window " + std::to_string(w.start) + " " + w.slot.uuid + ": busy, idle and memory parts do not add up to " +
         "the cost " + std::to_string(w.cost_micros));
  if (sum != w.cost_micros)
    fail("window " + std::to_string(w.start) + " " + w.slot.uuid + ": charges add up to " + std::to_string(sum) +
         ", not the cost " + std::to_string(w.cost_micros));
  if (!w.energy) return;
  int64_t mj = 0;
  for (const auto& c : w.energy->charges) {
    if (c.millijoules < 0) fail("negative energy for " + c.account);
    mj += c.millijoules;
  }
  if (w.energy->millijoules < 0 || mj != w.energy->millijoules)
    fail("window " + std::to_string(w.start) + " " + w.slot.uuid + ": energy parts add up to " + std::to_string(mj) +
         " mJ, not the GPU's " + std::to_string(w.energy->millijoules));
}

bool Store::insert_window(const WindowRecord& w) {
  check_charges(w);
  exec("BEGIN IMMEDIATE");
  try {
    if (!insert_window_in_transaction(w)) {
      exec("ROLLBACK");
      return false;
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return true;
}

size_t Store::insert_windows(const std::vector<WindowRecord>& windows) {
  for (const auto& w : windows) check_charges(w);
  size_t inserted = 0;
  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& w : windows) inserted += insert_window_in_transaction(w) ? 1 : 0;
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return inserted;
}

std::vector<bool> Store::store_windows(const std::vector<WindowRecord>& windows, const CounterBaseline& baseline,
                                       const std::map<std::string, std::string>& meta) {
  for (const auto& w : windows) check_charges(w);
  std::vector<bool> inserted;
  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& w : windows) inserted.push_back(insert_window_in_transaction(w));
    write_baseline(baseline);
    for (const auto& [key, value] : meta) set_meta(key, value);
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return inserted;
}

void Store::write_baseline(const CounterBaseline& baseline) {
  exec("DELETE FROM counter_baseline");
  Stmt set(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('counter_set', ?)", *this);
  set.bind(1, baseline.counter_set);
  set.step();
  Stmt ins(db_, "INSERT INTO counter_baseline(account, busy_seconds, launches) VALUES(?,?,?)", *this);
  for (const auto& [account, c] : baseline.accounts) {
    ins.bind(1, account).bind(2, c.busy_seconds).bind(3, static_cast<int64_t>(c.launches));
    ins.step();
    ins.reset();
  }
}

std::optional<CounterBaseline> Store::counter_baseline() const {
  if (schema_version() < 4) return std::nullopt;
  Stmt set(db_, "SELECT value FROM meta WHERE key = 'counter_set'", *this);
  if (!set.step()) return std::nullopt;
  CounterBaseline b;
  b.counter_set = set.text(0);
  Stmt q(db_, "SELECT account, busy_seconds, launches FROM counter_baseline", *this);
  while (q.step()) b.accounts[q.text(0)] = {q.f64(1), static_cast<uint64_t>(q.i64(2))};
  return b;
}

bool Store::insert_window_in_transaction(const WindowRecord& w) {
  const auto [columns, marks] = window_columns(StoreTable::kWindows);
  Stmt ins(db_, ("INSERT OR IGNORE INTO windows(" + columns + ") VALUES(" + marks + ")").c_str(), *this);
  bind_window(ins, 1, StoreTable::kWindows, w);
  ins.step();
  if (sqlite3_changes(db_) == 0) return false;
  int64_t id = sqlite3_last_insert_rowid(db_);
  const auto [account_names, account_marks] = account_columns();
  Stmt acc(db_, ("INSERT INTO accounts(window_id," + account_names + ") VALUES(?," + account_marks + ")").c_str(), *this);
  for (const auto& a : w.accounts) {
    acc.bind(1, id);
    int i = 2;
    for_each_account_field([&](const AccountField&, auto&& v) { bind_field(acc, i++, v); }, a);
    acc.step();
    acc.reset();
  }
  Stmt ch(db_, "INSERT INTO charges(window_id,account,kind,micros) VALUES(?,?,?,?)", *this);
  for (const auto& c : w.charges) {
    ch.bind(1, id).bind(2, c.account).bind(3, std::string(to_string(c.kind))).bind(4, c.micros);
    ch.step();
    ch.reset();
  }
  insert_energy(id, w);
  return true;
}

void Store::insert_energy(int64_t id, const WindowRecord& w) {
  if (!w.energy) return;
  const auto [columns, marks] = window_columns(StoreTable::kWindowEnergy);
  Stmt e(db_, ("INSERT INTO window_energy(window_id," + columns + ") VALUES(?," + marks + ")").c_str(), *this);
  e.bind(1, id);
  bind_window(e, 2, StoreTable::kWindowEnergy, w);
  e.step();
  Stmt ch(db_, "INSERT INTO energy_charges(window_id,account,kind,millijoules) VALUES(?,?,?,?)", *this);
  for (const auto& c : w.energy->charges) {
    ch.bind(1, id).bind(2, c.account).bind(3, std::string(to_string(c.kind))).bind(4, c.millijoules);
    ch.step();
    ch.reset();
  }
}

std::optional<int64_t> Store::last_window_end() const {
  Stmt s(db_, "SELECT max(end) FROM windows", *this);
  if (s.step() && !s.null(0)) return s.i64(0);
  return std::nullopt;
}

void Store::for_each_window(int64_t from, int64_t to, const std::function<void(WindowRecord&&)>& fn) const {
  for_each_window_with_id(from, to, [&](int64_t, WindowRecord&& w) { fn(std::move(w)); });
}

// Three cursors in window-id order, merged: one window (with its accounts and
// charges) in memory at a time, no sort, whatever the range's size.
void Store::for_each_window_with_id(int64_t from, int64_t to,
                                    const std::function<void(int64_t, WindowRecord&&)>& fn) const {
  Stmt range(db_, "SELECT min(id), max(id) FROM windows WHERE start >= ? AND start < ?", *this);
  range.bind(1, from).bind(2, to);
  if (!range.step() || range.null(0)) return;
  const int64_t first_id = range.i64(0), last_id = range.i64(1);
  // A store from before a column was added, read without migrating: what it reads instead (window_fields.h).
  Stmt s(db_,
         ("SELECT id," + window_columns(StoreTable::kWindows, schema_version()).first +
          " FROM windows WHERE id BETWEEN ? AND ? AND start >= ? AND start < ? ORDER BY id")
             .c_str(),
         *this);
  s.bind(1, first_id).bind(2, last_id).bind(3, from).bind(4, to);
  // A store from before a column was added, read without migrating: what it reads instead (window_fields.h).
  Stmt a(db_,
         ("SELECT window_id," + account_columns(schema_version()).first +
          " FROM accounts WHERE window_id BETWEEN ? AND ? ORDER BY window_id, account")
             .c_str(),
         *this);
  a.bind(1, first_id).bind(2, last_id);
  Stmt c(db_,
         "SELECT window_id,account,kind,micros FROM charges WHERE window_id BETWEEN ? AND ? "
         "ORDER BY window_id, account, kind",
         *this);
  c.bind(1, first_id).bind(2, last_id);
  // A schema 1 store read without migrating has no energy tables: the same
  // cursors over no rows (energy unknown).
  const char* no_rows = "SELECT 0,0,'',NULL WHERE 0";
  Stmt e(db_,
         has_energy_ ? ("SELECT window_id," + window_columns(StoreTable::kWindowEnergy).first +
                        " FROM window_energy WHERE window_id BETWEEN ? AND ? ORDER BY window_id")
                           .c_str()
                     : no_rows,
         *this);
  Stmt ec(db_,
          has_energy_ ? "SELECT window_id,account,kind,millijoules FROM energy_charges WHERE window_id BETWEEN ? AND ? "
                        "ORDER BY window_id, account, kind"
                      : no_rows,
          *this);
  if (has_energy_) {
    e.bind(1, first_id).bind(2, last_id);
    ec.bind(1, first_id).bind(2, last_id);
  }
  bool a_row = a.step(), c_row = c.step(), e_row = e.step(), ec_row = ec.step();
  // Room for as many accounts and charges as the window before had (a GPU's
  // windows seldom change their holders): grown one by one, the vector of
  // ~550-byte accounts moved every record it held at 1, 2 and 4 (4 % of a
  // fleet shipper's CPU in `perf`).
  size_t last_accounts = 0, last_charges = 0, last_energy = 0;
  while (s.step()) {
    const int64_t id = s.i64(0);
    WindowRecord w;
    w.accounts.reserve(last_accounts);
    w.charges.reserve(last_charges);
    read_window(s, 1, StoreTable::kWindows, w);
    while (a_row && a.i64(0) < id) a_row = a.step();  // a window outside [from, to)
    for (; a_row && a.i64(0) == id; a_row = a.step()) {
      AccountRecord r;
      int c = 1;
      for_each_account_field([&](const AccountField&, auto&& v) { read_field(a, c++, std::forward<decltype(v)>(v)); }, r);
      w.accounts.push_back(std::move(r));
    }
    while (c_row && c.i64(0) < id) c_row = c.step();
    for (; c_row && c.i64(0) == id; c_row = c.step())
      w.charges.push_back({c.text(1), parse_charge_kind(c.text(2)), c.i64(3)});
    while (e_row && e.i64(0) < id) e_row = e.step();
    if (e_row && e.i64(0) == id) {
      read_window(e, 1, StoreTable::kWindowEnergy, w);
      if (w.energy) w.energy->charges.reserve(last_energy);
      e_row = e.step();
    }
    while (ec_row && ec.i64(0) < id) ec_row = ec.step();
    for (; ec_row && ec.i64(0) == id; ec_row = ec.step())
      if (w.energy)
        w.energy->charges.push_back(
            {ec.text(1), ec.text(2) == "busy" ? ChargeKind::kBusy : ChargeKind::kIdle, ec.i64(3)});
    last_accounts = w.accounts.size();
    last_charges = w.charges.size();
    last_energy = w.energy ? w.energy->charges.size() : 0;
    fn(id, std::move(w));
  }
}

std::optional<int64_t> Store::first_window_start() const {
  Stmt s(db_, "SELECT min(start) FROM windows", *this);
  if (s.step() && !s.null(0)) return s.i64(0);
  return std::nullopt;
}

std::vector<Store::WindowKey> Store::window_keys(int64_t from, int64_t to) const {
  std::vector<WindowKey> out;
  Stmt s(db_, "SELECT id, gpu_uuid, start, end FROM windows WHERE start >= ? AND start < ?", *this);
  s.bind(1, from).bind(2, to);
  while (s.step()) out.push_back({s.i64(0), s.text(1), s.i64(2), s.i64(3)});
  return out;
}

std::vector<std::pair<int64_t, WindowRecord>> Store::windows_with_ids(int64_t from, int64_t to) const {
  std::vector<std::pair<int64_t, WindowRecord>> out;
  for_each_window_with_id(from, to, [&](int64_t id, WindowRecord&& w) { out.emplace_back(id, std::move(w)); });
  sort_by_start_and_gpu(out);
  return out;
}

void Store::sort_by_start_and_gpu(std::vector<std::pair<int64_t, WindowRecord>>& windows) {
  std::sort(windows.begin(), windows.end(), [](const auto& x, const auto& y) {
    return std::tie(x.second.start, x.second.slot.uuid) < std::tie(y.second.start, y.second.slot.uuid);
  });
}

std::vector<WindowRecord> Store::windows(int64_t from, int64_t to) const {
  std::vector<WindowRecord> out;
  for (auto& [id, w] : windows_with_ids(from, to)) out.push_back(std::move(w));
  return out;
}

LedgerTotals Store::totals() const {
  LedgerTotals t;
  Stmt c(db_,
         "SELECT c.account, coalesce(a.namespace,''), coalesce(a.pod,''), coalesce(a.container,''), "
         "coalesce(a.team,''), w.gpu_uuid, c.kind, sum(c.micros) FROM charges c JOIN windows w ON w.id = c.window_id "
         "LEFT JOIN accounts a ON a.window_id = c.window_id AND a.account = c.account "
         "GROUP BY 1,2,3,4,5,6,7 ORDER BY 1,2,3,4,5,6,7",
         *this);
  while (c.step())
    t.cost.push_back({c.text(0), {c.text(1), c.text(2), c.text(3), c.text(4), "", ""}, c.text(5),
                      parse_charge_kind(c.text(6)), c.i64(7)});
  Stmt e(db_,
         has_energy_ ? "SELECT c.account, coalesce(a.namespace,''), coalesce(a.pod,''), coalesce(a.container,''), "
         "coalesce(a.team,''), w.gpu_uuid, c.kind, we.source, sum(c.millijoules) FROM energy_charges c "
         "JOIN windows w ON w.id = c.window_id JOIN window_energy we ON we.window_id = c.window_id "
         "LEFT JOIN accounts a ON a.window_id = c.window_id AND a.account = c.account "
         "GROUP BY 1,2,3,4,5,6,7,8 ORDER BY 1,2,3,4,5,6,7,8"
                     : "SELECT '','','','','','','','',0 WHERE 0",
         *this);
  while (e.step())
    t.energy.push_back({e.text(0), {e.text(1), e.text(2), e.text(3), e.text(4), "", ""}, e.text(5),
                        e.text(6) == "busy" ? ChargeKind::kBusy : ChargeKind::kIdle, e.text(7), e.i64(8)});
  std::string efficiency;
  for (const char* ratio : {"sm_active", "sm_occupancy", "tensor_active", "dram_active"})
    efficiency += std::string(", total(a.") + ratio + " * (w.end - w.start) * w.gpu_fraction), total(CASE WHEN a." +
                  ratio + " IS NULL THEN 0 ELSE (w.end - w.start) * w.gpu_fraction END)";
  Stmt a(db_,
         ("SELECT a.account, a.namespace, a.pod, a.container, a.team, w.gpu_uuid, "
          "sum(a.held_share * (w.end - w.start) * w.gpu_fraction), sum(a.gpu_busy_seconds * w.gpu_fraction), "
          "total(a.vram_byte_seconds), sum(a.launches)" +
          efficiency +
          (has_quality_ ? ", total(a.used_unallocated_seconds), total(a.allocated_unused_seconds)" : ", 0, 0") +
          " FROM accounts a JOIN windows w ON w.id = a.window_id GROUP BY 1,2,3,4,5,6 ORDER BY 1,2,3,4,5,6")
             .c_str(),
         *this);
  while (a.step()) {
    LedgerTotals::Seconds s{a.text(0), {a.text(1), a.text(2), a.text(3), a.text(4), "", ""}, a.text(5), a.f64(6), a.f64(7)};
    s.vram_byte_seconds = a.f64(8);
    s.launches = static_cast<uint64_t>(a.i64(9));
    for (int i = 0; i < 4; ++i) {
      s.efficiency_weighted[i] = a.f64(10 + 2 * i);
      s.efficiency_known[i] = a.f64(11 + 2 * i);
    }
    s.used_unallocated_seconds = a.f64(18);
    s.allocated_unused_seconds = a.f64(19);
    t.seconds.push_back(std::move(s));
  }
  Stmt g(db_, "SELECT gpu_uuid, sum(busy_fraction * (end - start)) FROM windows GROUP BY 1 ORDER BY 1", *this);
  while (g.step()) t.gpu_busy_seconds.emplace_back(g.text(0), g.f64(1));
  if (has_quality_) {
    Stmt f(db_, "SELECT gpu_uuid, device_findings FROM windows WHERE device_findings != ''", *this);
    while (f.step())
      for (const auto& [key, n] : decode_findings(f.text(1))) t.device_findings[{f.text(0), key}] += n;
  }
  return t;
}

int64_t Store::delete_before(int64_t cutoff) {
  // A store that ships to a fleet database (ledger/outbox.h) keeps what has not been shipped.
  Stmt s(db_,
         "DELETE FROM windows WHERE end <= ? AND (shipped != 0 OR NOT EXISTS(SELECT 1 FROM meta WHERE key = "
         "'fleet_outbox'))",
         *this);
  s.bind(1, cutoff);
  s.step();
  return sqlite3_changes(db_);
}

}  // namespace gpuledger::ledger
