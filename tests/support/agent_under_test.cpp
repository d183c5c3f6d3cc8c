#include "agent_under_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gpuledger::testing {
namespace {

bool exited(pid_t pid, int* status = nullptr) {
  int st = 0;
  pid_t r = ::waitpid(pid, &st, WNOHANG);
  if (r == pid && status) *status = st;
  return r == pid;
}

}  // namespace

AgentUnderTest::AgentUnderTest(const std::string& binary, const std::vector<std::string>& args,
                               const std::vector<std::string>& wrapper) {
  static int serial = 0;
  log_ = std::filesystem::temp_directory_path() /
         ("gl_agent_" + std::to_string(::getpid()) + "_" + std::to_string(serial++) + ".log");
  std::vector<std::string> argv = wrapper;
  for (const char* a : {"agent", "--listen", "127.0.0.1:0", "--no-nvml", "--pod-resources-socket", ""})
    argv.push_back(a);
  argv.insert(argv.begin() + static_cast<long>(wrapper.size()), binary);
  argv.insert(argv.end(), args.begin(), args.end());
  // Tests run side by side: pins only where a test asks for its own directory.
  if (std::find(args.begin(), args.end(), "--bpf-pin-dir") == args.end()) argv.push_back("--no-bpf-pins");
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    ::_exit(127);
  }
  const std::regex serving("serving https?://127\\.0\\.0\\.1:([0-9]+)/metrics");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    std::string text = log();
    if (std::regex_search(text, m, serving)) {
      port_ = std::stoi(m[1]);
      return;
    }
    if (exited(pid_)) {
      pid_ = -1;
      throw std::runtime_error("the agent exited during startup:\n" + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("the agent did not serve within 20 s:\n" + log());
}

AgentUnderTest::~AgentUnderTest() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!exited(pid_)) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::error_code ec;
  std::filesystem::remove(log_, ec);
}

std::string AgentUnderTest::log() const {
  std::ifstream in(log_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string AgentUnderTest::status_field(const std::string& key) const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      return v.substr(v.find_first_not_of(" \t"));
    }
  return "";
}

uint64_t AgentUnderTest::rss_kib() const {
  std::string v = status_field("VmRSS");
  return v.empty() ? 0 : std::stoull(v);
}

}  // namespace gpuledger::testing
