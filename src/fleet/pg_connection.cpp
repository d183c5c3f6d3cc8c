#include "fleet/pg_connection.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <utility>

#include "common/error.h"

namespace gpuledger::fleet {

namespace {

using Options = std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)>;

Options parse(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* o = PQconninfoParse(conninfo.c_str(), &err);
  if (!o) {
    // libpq's message may quote the string it could not parse: say only that it failed.
    if (err) PQfreemem(err);
    throw Error("the fleet database connection string is not a libpq URI or keyword string");
  }
  return Options(o, &PQconninfoFree);
}

std::string value_of(const Options& o, const char* key) {
  for (const PQconninfoOption* p = o.get(); p->keyword; ++p)
    if (std::string(p->keyword) == key && p->val) return p->val;
  return "";
}

std::string read_password(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("--fleet-db-password-file " + path + ": cannot read it");
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

constexpr const char* kStateMarker = " [SQLSTATE ";

// libpq's messages span lines ("server closed the connection unexpectedly\n\tThis
// probably means..."): one line for the log and /healthz.
std::string one_line(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::string redacted(const std::string& conninfo) {
  const Options o = parse(conninfo);
  std::string host = value_of(o, "host"), port = value_of(o, "port"), db = value_of(o, "dbname"),
              user = value_of(o, "user");
  std::string out = "postgresql://" + (user.empty() ? "" : user + "@") + (host.empty() ? "(default host)" : host);
  if (!port.empty()) out += ":" + port;
  out += "/" + db;
  return out;
}

bool has_password(const std::string& conninfo) { return !value_of(parse(conninfo), "password").empty(); }

std::string sqlstate_of(const std::string& message) {
  const auto at = message.rfind(kStateMarker);
  if (at == std::string::npos) return "";
  return message.substr(at + std::string(kStateMarker).size(), 5);
}

PgResult::~PgResult() {
  if (r_) PQclear(r_);
}
int PgResult::rows() const { return PQntuples(r_); }
int PgResult::columns() const { return PQnfields(r_); }
bool PgResult::null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string PgResult::text(int row, int col) const { return std::string(view(row, col)); }
std::string_view PgResult::view(int row, int col) const {
  return std::string_view(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}
int64_t PgResult::i64(int row, int col) const { return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10); }
double PgResult::f64(int row, int col) const { return std::strtod(PQgetvalue(r_, row, col), nullptr); }
std::optional<double> PgResult::opt_f64(int row, int col) const {
  return null(row, col) ? std::nullopt : std::optional<double>(f64(row, col));
}
std::optional<int64_t> PgResult::opt_i64(int row, int col) const {
  return null(row, col) ? std::nullopt : std::optional<int64_t>(i64(row, col));
}

PgConnection::PgConnection(const std::string& conninfo, const std::string& password_file) : name_(redacted(conninfo)) {
  // The string's own keywords (expand_dbname), then ours: a password from a
  // file, and a connect timeout unless the string sets one.
  std::vector<const char*> keys{"dbname"}, values{conninfo.c_str()};
  const Options o = parse(conninfo);
  std::string password, timeout = "10", application = value_of(o, "application_name");
  if (application.empty()) application = "gpuledger";
  if (!password_file.empty()) {
    password = read_password(password_file);
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  if (value_of(o, "connect_timeout").empty()) {
    keys.push_back("connect_timeout");
    values.push_back(timeout.c_str());
  }
  // A database cut off without a reset (a partition, a dead host) must fail
  // the batch, not hang the shipper: TCP keepalives and a user timeout unless
  // the string sets them (unix sockets ignore them).
  static const std::pair<const char*, const char*> kLiveness[] = {
      {"keepalives", "1"}, {"keepalives_idle", "30"}, {"keepalives_interval", "10"}, {"keepalives_count", "3"},
      {"tcp_user_timeout", "60000"}};
  for (const auto& [key, value] : kLiveness)
    if (value_of(o, key).empty()) {
      keys.push_back(key);
      values.push_back(value);
    }
  keys.push_back("application_name");
  values.push_back(application.c_str());
  keys.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = PQconnectdbParams(keys.data(), values.data(), 1);
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
    const std::string why = one_line(conn_ ? PQerrorMessage(conn_) : "out of memory");
    PQfinish(conn_);
    conn_ = nullptr;
    throw Error("fleet database " + name_ + ": cannot connect: " + why);
  }
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);  // NOTICEs of IF NOT EXISTS are not news
}

PgConnection::~PgConnection() {
  if (conn_) PQfinish(conn_);
}

std::string PgConnection::literal(const std::string& value) const {
  char* quoted = PQescapeLiteral(conn_, value.data(), value.size());
  if (!quoted) throw Error("fleet database " + name_ + ": cannot quote a value: " + PQerrorMessage(conn_));
  std::string out = quoted;
  PQfreemem(quoted);
  return out;
}

bool PgConnection::ok() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

bool PgConnection::in_transaction() const {
  const PGTransactionStatusType t = conn_ ? PQtransactionStatus(conn_) : PQTRANS_UNKNOWN;
  return t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

namespace {
[[noreturn]] void fail(pg_conn* conn, PGresult* r, const std::string& name) {
  // Copied before PQclear: the field lives in the result's memory.
  const char* field = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string state = field ? field : "08006";
  const std::string why = one_line(r && *PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(conn));
  if (r) PQclear(r);
  throw Error("fleet database " + name + ": " + why + kStateMarker + state + "]");
}
}  // namespace

void PgConnection::check_idle() const {
  if (sent_) throw Error("fleet database " + name_ + ": a statement is still in flight on this connection");
}

void PgConnection::send(const std::string& sql) {
  check_idle();
  if (log_) log_({sql, {}, true});
  if (!PQsendQuery(conn_, sql.c_str())) fail(conn_, nullptr, name_);
  sent_ = true;
}

PgResult PgConnection::receive() {
  if (!sent_) throw Error("fleet database " + name_ + ": nothing was sent to receive");
  // Idle again only once libpq is done with the connection, error read too:
  // a statement another thread starts before then is refused, not raced.
  struct Received {
    std::atomic<bool>& sent;
    ~Received() { sent = false; }
  } received{sent_};
  PGresult* r = PQgetResult(conn_);
  while (PGresult* more = PQgetResult(conn_)) PQclear(more);  // until libpq says the statement is done
  const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(conn_, r, name_);
  return PgResult(r);
}

void PgConnection::exec(const std::string& sql) {
  check_idle();
  if (log_) log_({sql, {}, true});
  PGresult* r = PQexec(conn_, sql.c_str());
  const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(conn_, r, name_);
  PQclear(r);
}

PgResult PgConnection::query(const std::string& sql, const std::vector<PgParam>& params) {
  check_idle();
  if (log_) log_({sql, params, false});
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                             nullptr, 0);
  const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(conn_, r, name_);
  return PgResult(r);
}

}  // namespace gpuledger::fleet
