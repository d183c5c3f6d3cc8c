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
  shipped INTEGER NOT NULL DEFAULT 0,
  device_ok INTEGER NOT NULL DEFAULT 0, device_suspect INTEGER NOT NULL DEFAULT 0,
  device_absent INTEGER NOT NULL DEFAULT 0, device_findings TEXT NOT NULL DEFAULT '',
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
  used_unallocated_seconds REAL, allocated_unused_seconds REAL,
  slurm_user TEXT NOT NULL DEFAULT '', slurm_account TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(window_id, account)) WITHOUT ROWID;
)";

// Schema 6: the rightsizing evidence (store.h, AccountEvidence); NULL: derived or unknown.
const char* kColumnsAddedIn6[][2] = {
    {"vram_peak_bytes", "INTEGER"},      {"vram_p95_bytes", "INTEGER"},     {"nvml_vram_peak_bytes", "INTEGER"},
    {"nvml_vram_p95_bytes", "INTEGER"},  {"sm_active_p95", "REAL"},         {"sm_occupancy_p95", "REAL"},
    {"busy_p95", "REAL"},                {"idle_lead_seconds", "REAL"},     {"idle_trail_seconds", "REAL"},
    {"idle_longest_seconds", "REAL"},    {"window_count", "INTEGER"},
};

// Schema 9: the device data's quality and allocation against use (store.h).
const char* kColumnsAddedIn9[][3] = {
    {"windows", "device_ok", "INTEGER NOT NULL DEFAULT 0"},
    {"windows", "device_suspect", "INTEGER NOT NULL DEFAULT 0"},
    {"windows", "device_absent", "INTEGER NOT NULL DEFAULT 0"},
    {"windows", "device_findings", "TEXT NOT NULL DEFAULT ''"},
    {"accounts", "used_unallocated_seconds", "REAL"},
    {"accounts", "allocated_unused_seconds", "REAL"},
};

// Schema 10: a Slurm job's user and account (store.h); '' in older rows.
const char* kColumnsAddedIn10[][3] = {
    {"accounts", "slurm_user", "TEXT NOT NULL DEFAULT ''"},
    {"accounts", "slurm_account", "TEXT NOT NULL DEFAULT ''"},
};

// Schema 8: the outbox's pending windows, oldest first (ledger/outbox.h).
const char* kOutboxIndex = "CREATE INDEX IF NOT EXISTS windows_unshipped ON windows(start, id) WHERE shipped = 0";

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

}  // namespace

using detail::Stmt;

void Store::fail(const std::string& what) const { throw Error("ledger store " + path_ + ": " + what); }

void Store::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    fail(msg);
  }
}

Store::Store(const std::string& path, Mode mode, Check check) : path_(path) {
  if (mode == Mode::kReadOnly && !std::filesystem::exists(path)) fail("no such file (is --store right?)");
  int flags = mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // A read-only store serves one reader (a report), the shipper's its one
  // thread: no mutex around every column read (a lock and an unlock each:
  // 14 % of the shipper's CPU with a backlog). The agent's store is shared by
  // its threads.
  flags |= mode == Mode::kReadWrite ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX;
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
      // Schema 8: the fleet outbox's marker (ledger/outbox.h). "< 8", not "== 7":
      // a store at 6 or 7 gets it, whichever steps before it exist.
      if (tables > 0 && version < 8) {
        exec("BEGIN IMMEDIATE");
        add_column_once("windows", "shipped", "INTEGER NOT NULL DEFAULT 0");
        exec("PRAGMA user_version=8");
        exec("COMMIT");
      }
      // Schema 9 (issue 33): device data quality, allocation against use. Self-contained: "< 9".
      if (tables > 0 && version < 9) {
        exec("BEGIN IMMEDIATE");
        for (const auto& [table, column, definition] : kColumnsAddedIn9) add_column_once(table, column, definition);
        exec("PRAGMA user_version=9");
        exec("COMMIT");
      }
      // Schema 10 (issue 32): the Slurm user and account. Self-contained: "< 10".
      if (tables > 0 && version < 10) {
        exec("BEGIN IMMEDIATE");
        for (const auto& [table, column, definition] : kColumnsAddedIn10) add_column_once(table, column, definition);
        exec("PRAGMA user_version=10");
        exec("COMMIT");
      }
      exec(kOutboxIndex);
    }
    has_energy_ = schema_version() >= 2;
    has_quality_ = schema_version() >= 9;
    exec("PRAGMA foreign_keys=ON");
    if (mode != Mode::kReadOnly && check == Check::kQuick) {
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

}  // namespace gpuledger::ledger
