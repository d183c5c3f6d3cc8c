#include "workload_walk.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "reliability_support.h"

namespace gpuledger::testing {

std::vector<std::string> make_workload_cgroups(const std::string& parent_dir, int n) {
  std::vector<std::string> dirs;
  for (int i = 0; i < n; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "/w%05d", i);
    dirs.push_back(parent_dir + name);
    if (::mkdir(dirs.back().c_str(), 0755) != 0) throw std::runtime_error("cannot make " + dirs.back());
  }
  return dirs;
}

void remove_cgroups(const std::vector<std::string>& dirs) {
  for (const auto& d : dirs) ::rmdir(d.c_str());
}

double walk_workloads(const bench::SimLibrary& lib, const std::vector<std::string>& dirs, const std::string& home,
                      int workers, int launches_each) {
  int ready[2], start[2];
  if (::pipe(ready) != 0 || ::pipe(start) != 0) throw std::runtime_error("pipe failed");
  std::vector<pid_t> pids;
  for (int w = 0; w < workers; ++w) {
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(ready[0]);
      ::close(start[1]);
      if (!join_cgroup(home.c_str())) _exit(2);
      try {
        bench::CudaSession session(lib.api());
        if (::write(ready[1], "r", 1) != 1) _exit(3);
        char go;
        if (::read(start[0], &go, 1) != 0) _exit(3);  // EOF: released
        for (size_t i = w; i < dirs.size(); i += workers) {
          if (!join_cgroup(dirs[i].c_str())) _exit(4);
          for (int n = 0; n < launches_each; ++n)
            if (session.launch() != CUDA_SUCCESS) _exit(5);
        }
        if (!join_cgroup(home.c_str())) _exit(2);
      } catch (...) {
        _exit(6);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  ::close(ready[1]);
  ::close(start[0]);
  char r;
  for (int w = 0; w < workers; ++w)
    if (::read(ready[0], &r, 1) != 1) break;  // a worker that failed its setup exits: reported below
  ::close(ready[0]);
  const auto begin = std::chrono::steady_clock::now();
  ::close(start[1]);  // go
  std::string failed;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed += " " + std::to_string(status);
  }
  if (!failed.empty()) throw std::runtime_error("workers failed with status" + failed);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace gpuledger::testing
