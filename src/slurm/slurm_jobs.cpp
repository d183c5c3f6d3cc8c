#include "slurm/slurm_jobs.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/log.h"
#include "common/unique_fd.h"
#include "slurm/job_mapping.h"
#include "slurm/slurm_cgroups.h"

extern char** environ;

namespace gpuledger::slurm {
namespace {

bool plain_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '@' || c == '+' || c == '-' || c == '(' || c == ')';
  });
}

std::string unnull(std::string_view s) { return s == "(null)" ? "" : std::string(s); }

}  // namespace

std::map<std::string, JobFacts> parse_squeue(std::string_view text, size_t* dropped) {
  std::map<std::string, JobFacts> out;
  size_t bad = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty()) continue;
    std::vector<std::string_view> f;
    for (size_t at = 0;;) {
      const auto bar = line.find('|', at);
      f.push_back(line.substr(at, bar - at));
      if (bar == std::string_view::npos) break;
      at = bar + 1;
    }
    if (f.size() != 5 || !job_id(f[0]) || !std::all_of(f.begin() + 1, f.end(), plain_name) || out.size() >= kMaxJobs) {
      ++bad;
      continue;
    }
    out[std::string(f[0])] = {std::string(f[0]), unnull(f[1]), unnull(f[2]), unnull(f[3]), unnull(f[4])};
  }
  if (dropped) *dropped += bad;
  return out;
}

std::optional<std::string> run_bounded(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                       size_t max_bytes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();
  if (rc != 0) return std::nullopt;
  std::string out;
  bool ok = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{read_end.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      ok = false;  // outlived its time
      break;
    }
    char buf[8192];
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      ok = false;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  if (!ok) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

SlurmJobFacts::SlurmJobFacts(std::function<std::vector<std::string>()> jobs, std::chrono::milliseconds interval,
                             std::string squeue)
    : jobs_(std::move(jobs)), interval_(interval), squeue_(std::move(squeue)) {}

SlurmJobFacts::~SlurmJobFacts() { stop(); }

void SlurmJobFacts::start() {
  // The jobs here are looked at every 200 ms (their cgroups: cheap, and a new
  // job's user and account should name its first window); the
  // controller is asked when they change, else every `interval`.
  thread_ = std::thread([this] {
    std::vector<std::string> asked;
    auto last = std::chrono::steady_clock::time_point{};
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      const std::vector<std::string> jobs = jobs_();
      if (jobs != asked || std::chrono::steady_clock::now() - last >= interval_) {
        if (refresh(jobs)) asked = jobs;
        last = std::chrono::steady_clock::now();
      }
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; });
    }
  });
}

void SlurmJobFacts::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<JobFacts> SlurmJobFacts::find(const std::string& job) const {
  std::lock_guard lock(mu_);
  auto it = facts_.find(job);
  if (it == facts_.end()) return std::nullopt;
  return it->second;
}

bool SlurmJobFacts::refresh(const std::vector<std::string>& jobs) {
  std::map<std::string, JobFacts> facts;
  if (!jobs.empty()) {
    std::string list;
    for (const auto& j : jobs) list += (list.empty() ? "" : ",") + j;
    const auto text = run_bounded({squeue_, "-h", "-j", list, "-o", "%i|%u|%a|%P|%q"}, kTimeout, kMaxOutputBytes);
    if (!text) {
      spdlog::debug("slurm: squeue did not answer; the jobs' accounts stay as they were");
      return false;
    }
    size_t dropped = 0;
    facts = parse_squeue(*text, &dropped);
    if (dropped) spdlog::warn("slurm: dropped {} squeue lines that are no job's plain fields", dropped);
  }
  std::lock_guard lock(mu_);
  facts_ = std::move(facts);
  return true;
}

}  // namespace gpuledger::slurm
