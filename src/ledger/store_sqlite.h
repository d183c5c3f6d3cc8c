#pragma once
// The store's SQLite statement wrapper, shared by the files of Store
// (store.cpp: opening, schema and migrations; store_windows.cpp; store_rollup.cpp;
// store_notes.cpp) and nothing else.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/store.h"

namespace gpuledger::ledger::detail {

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

}  // namespace gpuledger::ledger::detail
