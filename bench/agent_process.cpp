#include "agent_process.h"

#include <algorithm>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "report.h"

namespace gpuledger::bench {
namespace fs = std::filesystem;

namespace {

// A port nobody listens on right now (the agent binds it a moment later).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw Error("cannot find a free TCP port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string proc_file(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The number after "key:" in a /proc key-value file, 0 when absent.
// Whether the process has exited, leaving it to be reaped by its Child owner.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

uint64_t field_value(const std::string& text, const std::string& key) {
  auto at = text.find(key);
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + key.size()));
}

}  // namespace

AgentProcess::AgentProcess(const std::string& agent_binary, const std::string& cuda_lib,
                           const std::vector<std::string>& extra_args)
    : port_(free_port()) {
  std::vector<std::string> argv = {agent_binary, "agent", "--no-discovery", "--cuda-lib", cuda_lib,
                                   "--listen", "127.0.0.1:" + std::to_string(port_), "--log-level", "warn"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  // Each run measures from zero and leaves nothing pinned, unless it asks for its own pins.
  if (std::find(argv.begin(), argv.end(), "--bpf-pin-dir") == argv.end()) argv.push_back("--no-bpf-pins");
  child_ = std::make_unique<simulation::Child>(argv, simulation::SpawnOptions{});

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (has_exited(child_->pid())) throw Error("the agent exited during startup");
    httplib::Client client("127.0.0.1", port_);
    if (auto res = client.Get("/healthz"); res && res->status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw Error("the agent did not answer /healthz within 20 s");
}

AgentProcess::~AgentProcess() {
  ::kill(child_->pid(), SIGTERM);
  // Detaching a hundred uprobes can take tens of seconds on a VM (a grace
  // period each), so it gets a minute; Child's destructor SIGKILLs a
  // straggler and reaps.
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 600 && !has_exited(child_->pid()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  progress("agent process stopped %.1f s after SIGTERM", took.count());
}

std::string AgentProcess::get(const std::string& path) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(60, 0);
  auto res = client.Get(path);
  if (!res || res->status != 200) throw Error("GET " + path + " from the agent failed");
  return res->body;
}

double AgentProcess::cpu_seconds() const {
  // Fields 14 and 15 (utime, stime) follow the ")" that closes the command name.
  std::string stat = proc_file(pid(), "stat");
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

uint64_t AgentProcess::rss_kib() const { return field_value(proc_file(pid(), "status"), "VmRSS:"); }

uint64_t AgentProcess::bpf_map_kib() const {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid()) + "/fdinfo", ec)) {
    std::string info = proc_file(pid(), "fdinfo/" + entry.path().filename().string());
    if (info.find("map_type:") != std::string::npos) bytes += field_value(info, "memlock:");
  }
  return bytes / 1024;
}

}  // namespace gpuledger::bench
