#pragma once
// Test support: a real PostgreSQL server from Debian's packages, private to a
// test: `initdb` in a temporary folder, run as the unprivileged `postgres`
// user when the test runs as root, listening on a unix socket in that folder
// only (no TCP), password authentication (SCRAM) for every role. Stop and
// start it again mid-test to play an outage. Removed with its folder.
#include <string>
#include <vector>

namespace gpuledger::testing {

class PgServer {
 public:
  // Throws std::runtime_error (with initdb's or the server's log) when it cannot start.
  // `settings`: the server's -c options (tests: no fsync; a benchmark: durable).
  // `environment`: NAME=VALUE settings of the server's environment (a benchmark: glibc's malloc).
  explicit PgServer(std::string settings = "-c fsync=off", std::vector<std::string> environment = {});
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  void start();  // waits until it takes connections
  void stop();   // fast shutdown: open connections are cut
  // A keyword connection string for `user` (no password in it).
  std::string conninfo(const std::string& user = "gpuledger_admin", const std::string& dbname = "postgres") const;
  // The file holding the admin's password (for --fleet-db-password-file).
  std::string admin_password_file() const;
  // Creates a login role (password = its name, in the file returned) that is a member of `group`.
  std::string add_login(const std::string& name, const std::string& group);
  // Sets a login role's password (= its name, in the file returned), e.g. for
  // a role `gpuledger fleet-db add-node` made.
  std::string set_password(const std::string& role);
  // Restarts the server listening also on a loopback TCP port (port()) with
  // TLS (its certificate and key files, in PEM), where clients log in with a
  // certificate signed by `client_ca` whose CN maps to the role through
  // `ident_map` (pg_ident.conf lines of the map "gpuledger"); the unix socket
  // keeps password login.
  void enable_tls(const std::string& server_cert, const std::string& server_key, const std::string& client_ca,
                  const std::string& ident_map);
  int port() const { return port_; }
  // Runs SQL as the admin through psql; returns its stdout (tuples only, unaligned).
  std::string psql(const std::string& sql, const std::string& user = "gpuledger_admin") const;
  const std::string& dir() const { return dir_; }
  std::string log() const;  // the server's log so far

 private:
  std::string dir_;
  std::string settings_;
  std::vector<std::string> environment_;
  std::string listen_ = "-c listen_addresses=";
  int port_ = 5432;
  bool running_ = false;
};

// The folder holding initdb, pg_ctl and postgres (Debian: /usr/lib/postgresql/<major>/bin).
std::string postgres_bin_dir();

}  // namespace gpuledger::testing
