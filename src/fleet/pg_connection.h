#pragma once
// One libpq connection to the fleet database, and what may be said about it.
//
// The connection string is a libpq URI or keyword string (--fleet-db,
// GPULEDGER_FLEET_DB). Its password never comes from the command line: a
// password file (--fleet-db-password-file: the password on its first line) or
// libpq's own PGPASSFILE / ~/.pgpass. TLS is libpq's: sslmode, sslrootcert,
// sslcert, sslkey pass through untouched. Logs and errors name the database by
// redacted(): host, port, database and user, never a password. Unless the
// string sets them: connect_timeout 10 s, TCP keepalives (30 s idle, 3 x 10 s)
// and tcp_user_timeout 60 s, so a database cut off fails a batch, never hangs it.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct pg_conn;
struct pg_result;

namespace gpuledger::fleet {

// Throws Error when the string is not a libpq connection string.
std::string redacted(const std::string& conninfo);
// True when the string itself carries a password (refused on a command line).
bool has_password(const std::string& conninfo);

// A result, cleared on every path.
class PgResult {
 public:
  explicit PgResult(pg_result* r) : r_(r) {}
  ~PgResult();
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&&) = delete;
  int rows() const;
  int columns() const;
  bool null(int row, int col) const;
  std::string text(int row, int col) const;
  std::string_view view(int row, int col) const;  // the text, valid while this result lives
  int64_t i64(int row, int col) const;
  double f64(int row, int col) const;
  std::optional<double> opt_f64(int row, int col) const;
  std::optional<int64_t> opt_i64(int row, int col) const;

 private:
  pg_result* r_;
};

// A parameter: text, or SQL NULL.
using PgParam = std::optional<std::string>;

// A statement as it was sent: as a simple query (exec, send: may hold several
// statements) or with its parameters (query).
struct PgStatement {
  std::string sql;
  std::vector<PgParam> params;
  bool simple = false;
};
// Told each statement before it is sent. The fleet bench records a shipper's
// and sends them again, to measure the server's share of ingest without the
// shippers' CPU on the same cores (docs/performance.md, section 6).
using PgStatementLog = std::function<void(const PgStatement&)>;

class PgConnection {
 public:
  // Connects (timeout: connect_timeout, default 10 s) or throws Error naming
  // redacted(conninfo) and libpq's reason. password_file: empty for none.
  PgConnection(const std::string& conninfo, const std::string& password_file);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs SQL without parameters (may hold several statements); throws Error.
  void exec(const std::string& sql);
  // One statement with $1.. parameters as text; throws Error with the SQLSTATE.
  PgResult query(const std::string& sql, const std::vector<PgParam>& params = {});
  // One statement sent without waiting (a cursor's next page, fetched while
  // the last is read); receive() waits for its result and throws as query().
  // Nothing else may run on the connection meanwhile: exec, query and send
  // throw until receive() has returned or thrown, which may be on another
  // thread (fleet_reader.cpp's Cursor receives its next page on one).
  void send(const std::string& sql);
  PgResult receive();
  bool ok() const;  // the connection is still usable
  bool in_transaction() const;  // a BEGIN not yet ended (idle in it, or failed in it)
  // A string as an SQL literal (quoted and escaped by libpq, for statements
  // that take no parameters, e.g. DECLARE CURSOR).
  std::string literal(const std::string& value) const;
  const std::string& name() const { return name_; }
  void log_statements(PgStatementLog log) { log_ = std::move(log); }

 private:
  void check_idle() const;
  pg_conn* conn_ = nullptr;
  std::string name_;  // redacted
  std::atomic<bool> sent_{false};  // a send() not yet received (received on any thread)
  PgStatementLog log_;
};

// The SQLSTATE of an Error thrown by PgConnection ("" when none), e.g.
// "42501" (insufficient privilege), "08006" (connection failure).
std::string sqlstate_of(const std::string& message);

}  // namespace gpuledger::fleet
