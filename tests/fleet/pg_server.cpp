#include "pg_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace gpuledger::testing {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs argv (as `postgres` when root), stdout and stderr into `log`; returns the exit status.
// `env`: NAME=VALUE settings added to the child's environment.
int run_as_postgres(const std::vector<std::string>& argv, const std::string& log,
                    const std::vector<std::string>& env = {}) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (geteuid() == 0) {
      const passwd* pw = getpwnam("postgres");
      if (!pw || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(126);
    }
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    for (const auto& setting : env) {
      const size_t eq = setting.find('=');
      if (eq != std::string::npos) setenv(setting.substr(0, eq).c_str(), setting.c_str() + eq + 1, 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void give_to_postgres(const fs::path& p) {
  if (geteuid() != 0) return;
  const passwd* pw = getpwnam("postgres");
  if (!pw || chown(p.c_str(), pw->pw_uid, pw->pw_gid) != 0)
    throw std::runtime_error("the `postgres` user is needed to run PostgreSQL as root's tests (apt install postgresql)");
}

}  // namespace

std::string postgres_bin_dir() {
  if (const char* env = std::getenv("GPULEDGER_PG_BIN")) return env;
  for (int major = 20; major >= 12; --major) {
    const std::string dir = "/usr/lib/postgresql/" + std::to_string(major) + "/bin";
    if (fs::exists(dir + "/initdb")) return dir;
  }
  throw std::runtime_error("no PostgreSQL server found under /usr/lib/postgresql (apt install postgresql)");
}

PgServer::PgServer(std::string settings, std::vector<std::string> environment)
    : settings_(std::move(settings)), environment_(std::move(environment)) {
  char tmpl[] = "/tmp/gpuledger-pg-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  give_to_postgres(dir_);
  std::ofstream(dir_ + "/admin.pw") << "admin-secret\n";
  give_to_postgres(dir_ + "/admin.pw");
  // ~/.pgpass-style file for psql: host:port:db:user:password.
  std::ofstream(dir_ + "/pgpass") << "*:*:*:gpuledger_admin:admin-secret\n";
  fs::permissions(dir_ + "/pgpass", fs::perms::owner_read | fs::perms::owner_write);
  give_to_postgres(dir_ + "/pgpass");
  const std::string bin = postgres_bin_dir();
  if (run_as_postgres({bin + "/initdb", "-D", dir_ + "/data", "-U", "gpuledger_admin", "--pwfile=" + dir_ + "/admin.pw",
                       "--auth=scram-sha-256", "-E", "UTF8", "--no-sync", "--locale=C"},
                      dir_ + "/initdb.log") != 0)
    throw std::runtime_error("initdb failed:\n" + read_file(dir_ + "/initdb.log"));
  start();
}

PgServer::~PgServer() {
  try {
    stop();
  } catch (...) {
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void PgServer::start() {
  if (running_) return;
  const std::string bin = postgres_bin_dir();
  if (run_as_postgres(
          {bin + "/pg_ctl", "-D", dir_ + "/data", "-w", "-t", "60", "-l", dir_ + "/server.log", "-o",
           "-k " + dir_ + " " + listen_ + " -c port=" + std::to_string(port_) + " -c max_connections=50 " + settings_,
           "start"},
          dir_ + "/pg_ctl.log", environment_) != 0)
    throw std::runtime_error("PostgreSQL did not start:\n" + read_file(dir_ + "/pg_ctl.log") +
                             read_file(dir_ + "/server.log"));
  running_ = true;
}

void PgServer::stop() {
  if (!running_) return;
  run_as_postgres({postgres_bin_dir() + "/pg_ctl", "-D", dir_ + "/data", "-w", "-m", "fast", "stop"},
                  dir_ + "/pg_ctl.log");
  running_ = false;
}

std::string PgServer::conninfo(const std::string& user, const std::string& dbname) const {
  return "host=" + dir_ + " port=" + std::to_string(port_) + " dbname=" + dbname + " user=" + user;
}

std::string PgServer::admin_password_file() const { return dir_ + "/admin.pw"; }

std::string PgServer::log() const { return read_file(dir_ + "/server.log"); }

std::string PgServer::add_login(const std::string& name, const std::string& group) {
  psql("CREATE ROLE " + name + " LOGIN PASSWORD '" + name + "' IN ROLE " + group);
  const std::string file = dir_ + "/" + name + ".pw";
  std::ofstream(file) << name << "\n";
  std::ofstream(dir_ + "/pgpass", std::ios::app) << "*:*:*:" << name << ":" << name << "\n";
  return file;
}

std::string PgServer::set_password(const std::string& role) {
  psql("ALTER ROLE \"" + role + "\" PASSWORD '" + role + "'");
  std::string name = role;  // a node's role may hold a slash (cluster/node)
  for (auto& c : name)
    if (c == '/') c = '_';
  const std::string file = dir_ + "/" + name + ".pw";
  std::ofstream(file) << role << "\n";
  return file;
}

void PgServer::enable_tls(const std::string& server_cert, const std::string& server_key, const std::string& client_ca,
                          const std::string& ident_map) {
  const std::string data = dir_ + "/data/";
  fs::copy_file(server_cert, data + "server.crt", fs::copy_options::overwrite_existing);
  fs::copy_file(server_key, data + "server.key", fs::copy_options::overwrite_existing);
  fs::copy_file(client_ca, data + "client-ca.crt", fs::copy_options::overwrite_existing);
  fs::permissions(data + "server.key", fs::perms::owner_read | fs::perms::owner_write);
  for (const char* f : {"server.crt", "server.key", "client-ca.crt"}) give_to_postgres(data + f);
  // Passwords on the unix socket; certificates only on TCP, and only over TLS.
  std::ofstream(data + "pg_hba.conf") << "local all all scram-sha-256\n"
                                         "hostssl all all 127.0.0.1/32 cert map=gpuledger\n";
  std::ofstream(data + "pg_ident.conf") << ident_map;
  // A free loopback port, as the kernel gives one.
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free loopback port");
  ::close(s);
  stop();
  // The unix socket's name follows the port: psql and conninfo() follow it too.
  port_ = ntohs(a.sin_port);
  listen_ = "-c listen_addresses=127.0.0.1 -c ssl=on -c ssl_ca_file=client-ca.crt";
  start();
}

std::string PgServer::psql(const std::string& sql, const std::string& user) const {
  const std::string out = dir_ + "/psql.out";
  fs::remove(out);
  const std::string pgpass = dir_ + "/pgpass";
  const int rc = run_as_postgres(
      {fs::path(postgres_bin_dir()).parent_path().string() + "/bin/psql", "-X", "-q", "-A", "-t", "-v",
       "ON_ERROR_STOP=1", "-h", dir_, "-p", std::to_string(port_), "-U", user, "-d", "postgres", "-c", sql},
      out, {"PGPASSFILE=" + pgpass});
  const std::string text = read_file(out);
  if (rc != 0) throw std::runtime_error("psql failed: " + sql + "\n" + text);
  return text;
}

}  // namespace gpuledger::testing
