#include "simulation/tenant.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace gpuledger::simulation {
namespace fs = std::filesystem;

ScopedCgroup::ScopedCgroup(const std::string& mount, const std::string& path) : path_(path) {
  fs::path dir = mount;
  for (const auto& part : fs::path(path).relative_path()) {
    dir /= part;
    if (::mkdir(dir.c_str(), 0755) == 0) {
      created_.push_back(dir.string());
    } else if (errno != EEXIST) {
      throw Error("cannot create cgroup " + dir.string() + ": " + std::strerror(errno));
    }
  }
  dir_ = dir.string();
}

ScopedCgroup::~ScopedCgroup() {
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());
}

Child::Child(const std::vector<std::string>& argv, const SpawnOptions& options) {
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
  if (options.pipe_stdin && ::pipe2(in_pipe, O_CLOEXEC) != 0) throw Error("pipe failed");
  if (options.pipe_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) throw Error("pipe failed");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Child: join the cgroups first, so every CUDA call it makes is theirs.
    for (const auto& dir : options.cgroup_dirs) {
      int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY);
      if (fd < 0 || ::write(fd, "0", 1) != 1) _exit(126);
      ::close(fd);
    }
    if (options.pipe_stdin) ::dup2(in_pipe[0], 0);
    if (options.pipe_stdout) ::dup2(out_pipe[1], 1);
    for (const auto& e : options.env) ::putenv(const_cast<char*>(e.c_str()));
    ::execvp(args[0], args.data());
    _exit(127);
  }
  if (options.pipe_stdin) {
    ::close(in_pipe[0]);
    stdin_fd_ = in_pipe[1];
  }
  if (options.pipe_stdout) {
    ::close(out_pipe[1]);
    stdout_fd_ = out_pipe[0];
  }
}

Child::~Child() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    wait();
  }
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

void Child::write_line(const std::string& line) {
  std::string s = line + "\n";
  if (stdin_fd_ < 0 || ::write(stdin_fd_, s.data(), s.size()) != static_cast<ssize_t>(s.size()))
    throw Error("cannot write to child " + std::to_string(pid_));
}

void Child::close_stdin() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
}

std::string Child::read_line() {
  while (true) {
    auto nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    char buf[4096];
    ssize_t n = stdout_fd_ < 0 ? 0 : ::read(stdout_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string rest;
      rest.swap(buffered_);
      return rest;
    }
    buffered_.append(buf, n);
  }
}

std::string Child::read_all() {
  std::string all;
  all.swap(buffered_);
  char buf[4096];
  ssize_t n;
  while (stdout_fd_ >= 0 && ((n = ::read(stdout_fd_, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) all.append(buf, n);
  return all;
}

int Child::wait() {
  if (reaped_) return status_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return status_;
}

}  // namespace gpuledger::simulation
