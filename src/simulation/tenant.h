#pragma once
// Runs simulated tenants the way a node runs real ones: each in its own cgroup,
// shaped like a Kubernetes pod's. Used by `gpuledger demo`, the integration
// tests and the benchmarks; the processes and cgroups are real.
#include <sys/types.h>

#include <string>
#include <vector>

namespace gpuledger::simulation {

// A cgroup directory created for the tenant and removed (with any it created
// on the way) when destroyed, once empty.
class ScopedCgroup {
 public:
  ScopedCgroup(const std::string& mount, const std::string& path);  // throws Error
  ~ScopedCgroup();
  ScopedCgroup(const ScopedCgroup&) = delete;
  ScopedCgroup& operator=(const ScopedCgroup&) = delete;
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  std::vector<std::string> created_;
};

struct SpawnOptions {
  std::vector<std::string> cgroup_dirs;  // cgroup.procs of each is written by the child before exec
  std::vector<std::string> env;          // extra NAME=VALUE entries
  bool pipe_stdin = false;
  bool pipe_stdout = false;
};

class Child {
 public:
  Child(const std::vector<std::string>& argv, const SpawnOptions& options);  // throws Error
  ~Child();  // kills and reaps a child still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void write_line(const std::string& line);  // to its stdin
  void close_stdin();
  std::string read_line();                   // from its stdout; "" at EOF
  std::string read_all();
  int wait();                                // exit status, or 128+signal

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1, stdout_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string buffered_;
};

}  // namespace gpuledger::simulation
