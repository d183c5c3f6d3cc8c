#include "ledger/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <sstream>
#include <string_view>
#include <tuple>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/hourly_rollup.h"

namespace gpuledger::ledger {

namespace {

constexpr int kApplicationId = 0x47504C47;  // 'GPLG'

const char* kSchema = R"(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE windows(
  id INTEGER PRIMARY KEY,
  start INTEGER NOT NULL,
  end INTEGER NOT NULL,
  gpu_uuid TEXT NOT NULL,
  parent_uuid TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  mig_profile TEXT,
  gpu_fraction REAL NOT NULL DEFAULT 1,
  currency TEXT NOT NULL,
  cost_micros INTEGER NOT NULL,
  busy_micros INTEGER NOT NULL,
  idle_micros INTEGER NOT NULL,
  busy_fraction REAL NOT NULL,
  busy_source TEXT NOT NULL,
  exclusive INTEGER NOT NULL,
  observed_seconds REAL NOT NULL,
  source TEXT NOT NULL,
  sm_active REAL, sm_occupancy REAL, tensor_active REAL, dram_active REAL,
  memory_micros INTEGER NOT NULL DEFAULT 0,
  cost_policy TEXT NOT NULL DEFAULT 'usage',
  allocated_total REAL NOT NULL DEFAULT 0,
  split_source TEXT NOT NULL DEFAULT '',
  UNIQUE(start, gpu_uuid));
CREATE INDEX windows_end ON windows(end);
CREATE TABLE accounts(
  window_id INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
  account TEXT NOT NULL,
  namespace TEXT NOT NULL DEFAULT '', pod TEXT NOT NULL DEFAULT '',
  container TEXT NOT NULL DEFAULT '', team TEXT NOT NULL DEFAULT '',
  held_share REAL NOT NULL, busy_seconds REAL NOT NULL, activity_share REAL NOT NULL,
  gpu_busy_seconds REAL NOT NULL, vram_byte_seconds REAL NOT NULL, launches INTEGER NOT NULL,
  sm_active REAL, sm_occupancy REAL, tensor_active REAL, dram_active REAL,
  allocated_share REAL NOT NULL DEFAULT 0,
  allocated_share_known INTEGER NOT NULL DEFAULT 1,
  vram_peak_bytes INTEGER, vram_p95_bytes INTEGER, nvml_vram_peak_bytes INTEGER, nvml_vram_p95_bytes INTEGER,
  sm_active_p95 REAL, sm_occupancy_p95 REAL, busy_p95 REAL,
  idle_lead_seconds REAL, idle_trail_seconds REAL, idle_longest_seconds REAL, window_count INTEGER,
  PRIMARY KEY(window_id, account)) WITHOUT ROWID;
)";

// Schema 6: the rightsizing evidence (store.h, AccountEvidence); NULL: derived or unknown.
const char* kColumnsAddedIn6[][2] = {
    {"vram_peak_bytes", "INTEGER"},      {"vram_p95_bytes", "INTEGER"},     {"nvml_vram_peak_bytes", "INTEGER"},
    {"nvml_vram_p95_bytes", "INTEGER"},  {"sm_active_p95", "REAL"},         {"sm_occupancy_p95", "REAL"},
    {"busy_p95", "REAL"},                {"idle_lead_seconds", "REAL"},     {"idle_trail_seconds", "REAL"},
    {"idle_longest_seconds", "REAL"},    {"window_count", "INTEGER"},
};
constexpr const char* kEvidenceColumns =
    "vram_peak_bytes,vram_p95_bytes,nvml_vram_peak_bytes,nvml_vram_p95_bytes,sm_active_p95,sm_occupancy_p95,"
    "busy_p95,idle_lead_seconds,idle_trail_seconds,idle_longest_seconds,window_count";
constexpr const char* kNoEvidence = "NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL";

// Schema 4: the counters the stored windows were charged up to (store.h).
const char* kBaselineTable = R"(
CREATE TABLE IF NOT EXISTS counter_baseline(
  account TEXT PRIMARY KEY,
  busy_seconds REAL NOT NULL,
  launches INTEGER NOT NULL) WITHOUT ROWID;
)";

// Schema 5: whether each holder's allocated share was known (store.h).
const char* kColumnAddedIn5[3] = {"accounts", "allocated_share_known", "INTEGER NOT NULL DEFAULT 1"};

// The charges table (rebuilt by the schema 3 migration: a CHECK cannot be altered).
const char* kChargesTable = R"(
CREATE TABLE charges(
  window_id INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
  account TEXT NOT NULL,
  kind TEXT NOT NULL CHECK(kind IN ('busy','idle','memory')),
  micros INTEGER NOT NULL CHECK(micros >= 0),
  PRIMARY KEY(window_id, account, kind)) WITHOUT ROWID;
)";

// Schema 2 -> 3: allocated against used, the memory part of the cost.
// (table, column, definition); a column already there is left as it is.
const char* kColumnsAddedIn3[][3] = {
    {"windows", "memory_micros", "INTEGER NOT NULL DEFAULT 0"},
    {"windows", "cost_policy", "TEXT NOT NULL DEFAULT 'usage'"},
    {"windows", "allocated_total", "REAL NOT NULL DEFAULT 0"},
    {"accounts", "allocated_share", "REAL NOT NULL DEFAULT 0"},
};
const char* kMigrateTo3 = R"(
UPDATE accounts SET allocated_share = held_share;
UPDATE windows SET allocated_total = (SELECT total(held_share) FROM accounts a WHERE a.window_id = windows.id);
ALTER TABLE charges RENAME TO charges_v2;
)";
const char* kMigrateTo3Copy = R"(
INSERT INTO charges SELECT window_id, account, kind, micros FROM charges_v2;
DROP TABLE charges_v2;
)";

// Schema 2: each window's energy and its split (no row: unknown).
const char* kEnergySchema = R"(
CREATE TABLE window_energy(
  window_id INTEGER PRIMARY KEY REFERENCES windows(id) ON DELETE CASCADE,
  millijoules INTEGER NOT NULL CHECK(millijoules >= 0),
  source TEXT NOT NULL,
  carbon_g_per_kwh REAL);
CREATE TABLE energy_charges(
  window_id INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
  account TEXT NOT NULL,
  kind TEXT NOT NULL CHECK(kind IN ('busy','idle')),
  millijoules INTEGER NOT NULL CHECK(millijoules >= 0),
  PRIMARY KEY(window_id, account, kind)) WITHOUT ROWID;
)";

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, const Store& store) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw Error("ledger store " + store.path() + ": " + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(s_, i, v)); }
  // Names come from tenants: stored as valid UTF-8 (common/utf8.h), never raw bytes.
  Stmt& bind(int i, const std::string& v) {
    const std::string text = valid_utf8(v);
    return check(sqlite3_bind_text(s_, i, text.c_str(), -1, SQLITE_TRANSIENT));
  }
  Stmt& bind(int i, const std::optional<double>& v) {
    return v ? bind(i, *v) : check(sqlite3_bind_null(s_, i));
  }
  Stmt& bind(int i, const std::optional<std::string>& v) {
    return v ? bind(i, *v) : check(sqlite3_bind_null(s_, i));
  }
  // Byte counts: below 2^63 (no GPU holds more), stored as SQLite integers.
  Stmt& bind(int i, const std::optional<uint64_t>& v) {
    return v ? bind(i, static_cast<int64_t>(*v)) : check(sqlite3_bind_null(s_, i));
  }
  Stmt& bind(int i, const std::optional<int64_t>& v) { return v ? bind(i, *v) : check(sqlite3_bind_null(s_, i)); }
  // true: a row is ready; false: done.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("sqlite: ") + sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  // Rows written before names were sanitised (or by another writer) may hold
  // any bytes: what is read is valid UTF-8 whatever is stored.
  std::string text(int c) const {
    auto p = sqlite3_column_text(s_, c);
    if (!p) return "";
    return valid_utf8({reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, c))});
  }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::optional<double> opt(int c) const { return null(c) ? std::nullopt : std::optional<double>(f64(c)); }
  std::optional<int64_t> opt_i64(int c) const { return null(c) ? std::nullopt : std::optional<int64_t>(i64(c)); }
  std::optional<uint64_t> opt_bytes(int c) const {
    return null(c) || i64(c) < 0 ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(i64(c)));
  }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) throw Error(std::string("sqlite bind: ") + sqlite3_errmsg(db_));
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace

void Store::fail(const std::string& what) const { throw Error("ledger store " + path_ + ": " + what); }

void Store::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    fail(msg);
  }
}

Store::Store(const std::string& path, Mode mode) : path_(path) {
  if (mode == Mode::kReadOnly && !std::filesystem::exists(path)) fail("no such file (is --store right?)");
  int flags = mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // A read-only store serves one reader (a report): no mutex around every
  // column read. The agent's store is shared by its threads.
  flags |= mode == Mode::kReadOnly ? SQLITE_OPEN_NOMUTEX : SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    fail("cannot open: " + msg);
  }
  try {
    sqlite3_busy_timeout(db_, 5000);
    int version = 0, app_id = 0, tables = 0;
    try {
      Stmt v(db_, "PRAGMA user_version", *this);
      if (v.step()) version = static_cast<int>(v.i64(0));
      Stmt a(db_, "PRAGMA application_id", *this);
      if (a.step()) app_id = static_cast<int>(a.i64(0));
      Stmt t(db_, "SELECT count(*) FROM sqlite_master", *this);
      if (t.step()) tables = static_cast<int>(t.i64(0));
    } catch (const Error& e) {
      fail(std::string("not a usable SQLite database (corrupt, or not a gpuledger store): ") + e.what() +
           "; move it aside to start a new ledger");
    }
    if (tables > 0 && app_id != kApplicationId)
      fail("a SQLite database, but not a gpuledger ledger store (application_id " + std::to_string(app_id) + ")");
    if (version > kStoreSchemaVersion)
      fail("schema version " + std::to_string(version) + " is newer than this gpuledger understands (" +
           std::to_string(kStoreSchemaVersion) + "); use a newer gpuledger to read it");
    if (mode == Mode::kReadOnly) {
      if (tables == 0) fail("empty file: not a gpuledger ledger store");
    } else {
      exec("PRAGMA journal_mode=WAL");
      exec("PRAGMA synchronous=NORMAL");
      if (tables == 0) {
        exec("BEGIN");
        exec(kSchema);
        exec(kChargesTable);
        exec(kEnergySchema);
        exec(kBaselineTable);
        exec("PRAGMA application_id=" + std::to_string(kApplicationId));
        exec("PRAGMA user_version=" + std::to_string(kStoreSchemaVersion));
        exec("COMMIT");
      }
      // Migrations from older versions (version < kStoreSchemaVersion).
      if (tables > 0 && version < 2) {
        exec("BEGIN IMMEDIATE");
        exec(kEnergySchema);
        exec("PRAGMA user_version=2");
        exec("COMMIT");
      }
      if (tables > 0 && version < 3) migrate_to_3();
      if (tables > 0 && version < 4) {
        exec("BEGIN IMMEDIATE");
        exec(kBaselineTable);
        exec("PRAGMA user_version=4");
        exec("COMMIT");
      }
      if (tables > 0 && version < 5) {
        exec("BEGIN IMMEDIATE");
        add_column_once(kColumnAddedIn5[0], kColumnAddedIn5[1], kColumnAddedIn5[2]);
        exec("PRAGMA user_version=5");
        exec("COMMIT");
      }
      if (tables > 0 && version < 6) {
        exec("BEGIN IMMEDIATE");
        for (const auto& [column, definition] : kColumnsAddedIn6) add_column_once("accounts", column, definition);
        exec("PRAGMA user_version=6");
        exec("COMMIT");
      }
      if (tables > 0 && version < 7) {
        exec("BEGIN IMMEDIATE");
        add_column_once("windows", "split_source", "TEXT NOT NULL DEFAULT ''");  // '': written before schema 7
        exec("PRAGMA user_version=7");
        exec("COMMIT");
      }
    }
    has_energy_ = schema_version() >= 2;
    has_allocation_ = schema_version() >= 3;
    has_share_known_ = schema_version() >= 5;
    has_evidence_ = schema_version() >= 6;
    has_split_source_ = schema_version() >= 7;
    exec("PRAGMA foreign_keys=ON");
    if (mode == Mode::kReadWrite) {
      Stmt q(db_, "PRAGMA quick_check", *this);
      if (q.step() && q.text(0) != "ok") fail("corrupt (quick_check: " + q.text(0) + "); move it aside");
    }
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

// Held shares were what schema 2 billed on: they become the allocated shares
// (a window with holders: allocated in full, so total 1). The charges table
// is copied into one whose CHECK accepts 'memory', in one transaction.
void Store::migrate_to_3() {
  exec("PRAGMA foreign_keys=OFF");
  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& [table, column, definition] : kColumnsAddedIn3) add_column_once(table, column, definition);
    exec(kMigrateTo3);
    exec(kChargesTable);
    exec(kMigrateTo3Copy);
    exec("PRAGMA user_version=3");
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

// A column already there (a migration cut short, or a newer writer's) is left as it is.
void Store::add_column_once(const char* table, const char* column, const char* definition) {
  Stmt has(db_, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", *this);
  has.bind(1, std::string(table)).bind(2, std::string(column));
  if (has.step() && has.i64(0) == 0)
    exec(std::string("ALTER TABLE ") + table + " ADD COLUMN " + column + " " + definition);
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

int Store::schema_version() const {
  Stmt v(db_, "PRAGMA user_version", *this);
  return v.step() ? static_cast<int>(v.i64(0)) : 0;
}

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

std::vector<bool> Store::store_windows(const std::vector<WindowRecord>& windows, const CounterBaseline& baseline) {
  for (const auto& w : windows) check_charges(w);
  std::vector<bool> inserted;
  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& w : windows) inserted.push_back(insert_window_in_transaction(w));
    write_baseline(baseline);
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
  Stmt ins(db_,
           "INSERT OR IGNORE INTO windows(start,end,gpu_uuid,parent_uuid,model,mig_profile,gpu_fraction,currency,"
           "cost_micros,busy_micros,idle_micros,busy_fraction,busy_source,exclusive,observed_seconds,source,"
           "sm_active,sm_occupancy,tensor_active,dram_active,memory_micros,cost_policy,allocated_total,split_source) "
           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
           *this);
  ins.bind(1, w.start).bind(2, w.end).bind(3, w.slot.uuid).bind(4, w.slot.parent_uuid).bind(5, w.slot.model);
  ins.bind(6, w.slot.mig_profile).bind(7, w.gpu_fraction).bind(8, w.currency).bind(9, w.cost_micros);
  ins.bind(10, w.busy_micros).bind(11, w.idle_micros).bind(12, w.busy_fraction).bind(13, w.busy_source);
  ins.bind(14, int64_t{w.exclusive}).bind(15, w.observed_seconds).bind(16, w.source);
  ins.bind(17, w.device.sm_active).bind(18, w.device.sm_occupancy).bind(19, w.device.tensor_active);
  ins.bind(20, w.device.dram_active).bind(21, w.memory_micros).bind(22, w.cost_policy).bind(23, w.allocated_total);
  ins.bind(24, w.split_source);
  ins.step();
  if (sqlite3_changes(db_) == 0) return false;
  int64_t id = sqlite3_last_insert_rowid(db_);
  Stmt acc(db_,
           (std::string("INSERT INTO accounts(window_id,account,namespace,pod,container,team,held_share,busy_seconds,"
           "activity_share,gpu_busy_seconds,vram_byte_seconds,launches,sm_active,sm_occupancy,tensor_active,"
           "dram_active,allocated_share,allocated_share_known,") +
               kEvidenceColumns + ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
               .c_str(),
           *this);
  for (const auto& a : w.accounts) {
    acc.bind(1, id).bind(2, a.account).bind(3, a.labels.namespace_name).bind(4, a.labels.pod);
    acc.bind(5, a.labels.container).bind(6, a.labels.team).bind(7, a.held_share).bind(8, a.busy_seconds);
    acc.bind(9, a.activity_share).bind(10, a.gpu_busy_seconds).bind(11, a.vram_byte_seconds);
    acc.bind(12, static_cast<int64_t>(a.launches)).bind(13, a.efficiency.sm_active);
    acc.bind(14, a.efficiency.sm_occupancy).bind(15, a.efficiency.tensor_active).bind(16, a.efficiency.dram_active);
    acc.bind(17, a.allocated_share).bind(18, int64_t{a.allocated_share_known});
    const AccountEvidence& ev = a.evidence;
    acc.bind(19, ev.vram_peak_bytes).bind(20, ev.vram_p95_bytes).bind(21, ev.nvml_vram_peak_bytes);
    acc.bind(22, ev.nvml_vram_p95_bytes).bind(23, ev.sm_active_p95).bind(24, ev.sm_occupancy_p95).bind(25, ev.busy_p95);
    const auto idle = [&](double IdleRun::*field) {
      return ev.idle ? std::optional<double>((*ev.idle).*field) : std::nullopt;
    };
    acc.bind(26, idle(&IdleRun::lead)).bind(27, idle(&IdleRun::trail)).bind(28, idle(&IdleRun::longest));
    acc.bind(29, ev.windows);
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
  Stmt e(db_, "INSERT INTO window_energy(window_id,millijoules,source,carbon_g_per_kwh) VALUES(?,?,?,?)", *this);
  e.bind(1, id).bind(2, w.energy->millijoules).bind(3, w.energy->source).bind(4, w.energy->carbon_g_per_kwh);
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
  // A schema 2 store read without migrating: no memory part, billed by usage, allocated = held.
  Stmt s(db_,
         (std::string("SELECT id,start,end,gpu_uuid,parent_uuid,model,mig_profile,gpu_fraction,currency,cost_micros,"
                      "busy_micros,idle_micros,busy_fraction,busy_source,exclusive,observed_seconds,source,sm_active,"
                      "sm_occupancy,tensor_active,dram_active,") +
          (has_allocation_ ? "memory_micros,cost_policy,allocated_total" : 
                           "0,'usage',(SELECT total(held_share) FROM accounts a WHERE a.window_id = windows.id)") +
          (has_split_source_ ? ",split_source" : ",''") + " FROM windows WHERE id BETWEEN ? AND ? AND start >= ? AND start < ? ORDER BY id")
             .c_str(),
         *this);
  s.bind(1, first_id).bind(2, last_id).bind(3, from).bind(4, to);
  Stmt a(db_,
         (std::string("SELECT window_id,account,namespace,pod,container,team,held_share,busy_seconds,activity_share,"
                      "gpu_busy_seconds,vram_byte_seconds,launches,sm_active,sm_occupancy,tensor_active,dram_active,") +
          (has_allocation_ ? "allocated_share" : "held_share") + (has_share_known_ ? ",allocated_share_known" : ",1") +
          "," + (has_evidence_ ? kEvidenceColumns : kNoEvidence) + " FROM accounts WHERE window_id BETWEEN ? AND ? ORDER BY window_id, account")
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
         has_energy_ ? "SELECT window_id,millijoules,source,carbon_g_per_kwh FROM window_energy "
                       "WHERE window_id BETWEEN ? AND ? ORDER BY window_id"
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
  while (s.step()) {
    const int64_t id = s.i64(0);
    WindowRecord w;
    w.start = s.i64(1);
    w.end = s.i64(2);
    w.slot.uuid = s.text(3);
    w.slot.parent_uuid = s.text(4);
    w.slot.model = s.text(5);
    if (!s.null(6)) w.slot.mig_profile = s.text(6);
    w.gpu_fraction = s.f64(7);
    w.currency = s.text(8);
    w.cost_micros = s.i64(9);
    w.busy_micros = s.i64(10);
    w.idle_micros = s.i64(11);
    w.busy_fraction = s.f64(12);
    w.busy_source = s.text(13);
    w.exclusive = s.i64(14) != 0;
    w.observed_seconds = s.f64(15);
    w.source = s.text(16);
    w.device = {s.opt(17), s.opt(18), s.opt(19), s.opt(20)};
    w.memory_micros = s.i64(21);
    w.cost_policy = s.text(22);
    w.allocated_total = s.f64(23);
    w.split_source = s.text(24);
    while (a_row && a.i64(0) < id) a_row = a.step();  // a window outside [from, to)
    for (; a_row && a.i64(0) == id; a_row = a.step()) {
      AccountRecord r;
      r.account = a.text(1);
      r.labels = {a.text(2), a.text(3), a.text(4), a.text(5)};
      r.held_share = a.f64(6);
      r.busy_seconds = a.f64(7);
      r.activity_share = a.f64(8);
      r.gpu_busy_seconds = a.f64(9);
      r.vram_byte_seconds = a.f64(10);
      r.launches = static_cast<uint64_t>(a.i64(11));
      r.efficiency = {a.opt(12), a.opt(13), a.opt(14), a.opt(15)};
      r.allocated_share = a.f64(16);
      r.allocated_share_known = a.i64(17) != 0;
      AccountEvidence& ev = r.evidence;
      ev.vram_peak_bytes = a.opt_bytes(18);
      ev.vram_p95_bytes = a.opt_bytes(19);
      ev.nvml_vram_peak_bytes = a.opt_bytes(20);
      ev.nvml_vram_p95_bytes = a.opt_bytes(21);
      ev.sm_active_p95 = a.opt(22);
      ev.sm_occupancy_p95 = a.opt(23);
      ev.busy_p95 = a.opt(24);
      if (!a.null(27)) ev.idle = IdleRun{a.f64(25), a.f64(26), a.f64(27)};
      ev.windows = a.opt_i64(28);
      w.accounts.push_back(std::move(r));
    }
    while (c_row && c.i64(0) < id) c_row = c.step();
    for (; c_row && c.i64(0) == id; c_row = c.step())
      w.charges.push_back({c.text(1), parse_charge_kind(c.text(2)), c.i64(3)});
    while (e_row && e.i64(0) < id) e_row = e.step();
    if (e_row && e.i64(0) == id) {
      w.energy = WindowEnergyRecord{e.i64(1), e.text(2), {}, e.opt(3)};
      e_row = e.step();
    }
    while (ec_row && ec.i64(0) < id) ec_row = ec.step();
    for (; ec_row && ec.i64(0) == id; ec_row = ec.step())
      if (w.energy)
        w.energy->charges.push_back(
            {ec.text(1), ec.text(2) == "busy" ? ChargeKind::kBusy : ChargeKind::kIdle, ec.i64(3)});
    fn(id, std::move(w));
  }
}

std::optional<int64_t> Store::first_window_start() const {
  Stmt s(db_, "SELECT min(start) FROM windows", *this);
  if (s.step() && !s.null(0)) return s.i64(0);
  return std::nullopt;
}

std::vector<WindowRecord> Store::windows(int64_t from, int64_t to) const {
  std::vector<WindowRecord> out;
  for_each_window(from, to, [&](WindowRecord&& w) { out.push_back(std::move(w)); });
  std::sort(out.begin(), out.end(), [](const WindowRecord& x, const WindowRecord& y) {
    return std::tie(x.start, x.slot.uuid) < std::tie(y.start, y.slot.uuid);
  });
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
    t.cost.push_back({c.text(0), {c.text(1), c.text(2), c.text(3), c.text(4)}, c.text(5),
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
    t.energy.push_back({e.text(0), {e.text(1), e.text(2), e.text(3), e.text(4)}, e.text(5),
                        e.text(6) == "busy" ? ChargeKind::kBusy : ChargeKind::kIdle, e.text(7), e.i64(8)});
  std::string efficiency;
  for (const char* ratio : {"sm_active", "sm_occupancy", "tensor_active", "dram_active"})
    efficiency += std::string(", total(a.") + ratio + " * (w.end - w.start) * w.gpu_fraction), total(CASE WHEN a." +
                  ratio + " IS NULL THEN 0 ELSE (w.end - w.start) * w.gpu_fraction END)";
  Stmt a(db_,
         ("SELECT a.account, a.namespace, a.pod, a.container, a.team, w.gpu_uuid, "
          "sum(a.held_share * (w.end - w.start) * w.gpu_fraction), sum(a.gpu_busy_seconds * w.gpu_fraction), "
          "total(a.vram_byte_seconds), sum(a.launches)" +
          efficiency + " FROM accounts a JOIN windows w ON w.id = a.window_id GROUP BY 1,2,3,4,5,6 ORDER BY 1,2,3,4,5,6")
             .c_str(),
         *this);
  while (a.step()) {
    LedgerTotals::Seconds s{a.text(0), {a.text(1), a.text(2), a.text(3), a.text(4)}, a.text(5), a.f64(6), a.f64(7)};
    s.vram_byte_seconds = a.f64(8);
    s.launches = static_cast<uint64_t>(a.i64(9));
    for (int i = 0; i < 4; ++i) {
      s.efficiency_weighted[i] = a.f64(10 + 2 * i);
      s.efficiency_known[i] = a.f64(11 + 2 * i);
    }
    t.seconds.push_back(std::move(s));
  }
  Stmt g(db_, "SELECT gpu_uuid, sum(busy_fraction * (end - start)) FROM windows GROUP BY 1 ORDER BY 1", *this);
  while (g.step()) t.gpu_busy_seconds.emplace_back(g.text(0), g.f64(1));
  return t;
}

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
    for_each_window_with_id(day, day_end, [&](int64_t id, WindowRecord&& w) {
      if (w.end - w.start >= kRollupSeconds) return;
      Key k{w.start / kRollupSeconds, w.slot.uuid, w.currency, w.gpu_fraction};
      hours[k].emplace_back(id, std::move(w));
    });
    exec("BEGIN IMMEDIATE");
    try {
      Stmt del(db_, "DELETE FROM windows WHERE id = ?", *this);
      for (auto& [key, group] : hours) {
        if (group.size() < 2) continue;
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

int64_t Store::delete_before(int64_t cutoff) {
  Stmt s(db_, "DELETE FROM windows WHERE end <= ?", *this);
  s.bind(1, cutoff);
  s.step();
  return sqlite3_changes(db_);
}

namespace {
constexpr std::string_view kMemorySizeUnknownKey = "memory_size_unknown/";

// "start-end,start-end" -> spans; malformed parts are skipped (the note is advisory).
std::vector<std::pair<int64_t, int64_t>> parse_spans(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    long long a = 0, b = 0;
    char dash = 0;
    std::istringstream p(part);
    if (p >> a >> dash >> b && dash == '-' && a < b) spans.emplace_back(a, b);
  }
  return spans;
}
}  // namespace

void Store::note_memory_size_unknown(const std::vector<std::string>& uuids, int64_t start, int64_t end) {
  if (uuids.empty() || start >= end) return;
  exec("BEGIN IMMEDIATE");
  try {
    Stmt get(db_, "SELECT value FROM meta WHERE key = ?", *this);
    Stmt set(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", *this);
    for (const auto& uuid : uuids) {
      const std::string key = std::string(kMemorySizeUnknownKey) + uuid;
      get.bind(1, key);
      auto spans = get.step() ? parse_spans(get.text(0)) : std::vector<std::pair<int64_t, int64_t>>{};
      get.reset();
      if (!spans.empty() && start >= spans.back().first && start <= spans.back().second)
        spans.back().second = std::max(spans.back().second, end);
      else
        spans.emplace_back(start, end);
      if (spans.size() > kMemorySizeUnknownSpans)
        spans.erase(spans.begin(), spans.end() - static_cast<std::ptrdiff_t>(kMemorySizeUnknownSpans));
      std::string value;
      for (const auto& [a, b] : spans) value += (value.empty() ? "" : ",") + std::to_string(a) + "-" + std::to_string(b);
      set.bind(1, key).bind(2, value);
      set.step();
      set.reset();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<Store::MemorySizeUnknown> Store::memory_size_unknown(int64_t from, int64_t to) const {
  std::vector<MemorySizeUnknown> out;
  Stmt q(db_, "SELECT key, value FROM meta WHERE substr(key, 1, 20) = 'memory_size_unknown/' ORDER BY key", *this);
  while (q.step()) {
    const std::string uuid = q.text(0).substr(kMemorySizeUnknownKey.size());
    for (const auto& [a, b] : parse_spans(q.text(1)))
      if (a < to && b > from) out.push_back({uuid, a, b});
  }
  return out;
}

}  // namespace gpuledger::ledger
