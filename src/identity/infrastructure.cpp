#include "identity/infrastructure.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>

namespace gpuledger::identity {
namespace {

std::string real_exe(const std::string& proc_root, uint32_t pid) {
  std::string link = proc_root + "/" + std::to_string(pid) + "/exe";
  char buf[4096];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string_view file_name(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Root owns the file and nobody else may write it. Read through the
// process's own exe link, so a file swapped under the path does not count.
bool root_owned(const std::string& proc_root, uint32_t pid) {
  struct stat st {};
  std::string link = proc_root + "/" + std::to_string(pid) + "/exe";
  return ::stat(link.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// A host cgroup: not a container, not a Slurm job, not a user's session.
bool host_cgroup(const Workload& w) {
  if (w.kind != WorkloadKind::kSystemd && w.kind != WorkloadKind::kCgroup) return false;
  return w.cgroup_path.find("/user.slice") == std::string::npos &&
         w.cgroup_path.find("/user@") == std::string::npos;
}

}  // namespace

bool is_mps_executable_name(std::string_view name) {
  return name == "nvidia-cuda-mps-server" || name == "nvidia-cuda-mps-control";
}

bool runs_mps_executable(const std::string& proc_root, uint32_t pid) {
  const std::string exe = real_exe(proc_root, pid);
  return !exe.empty() && is_mps_executable_name(file_name(exe));
}

bool mps_control_daemon_running(const std::string& proc_root) {
  DIR* dir = ::opendir(proc_root.c_str());
  if (!dir) return false;
  bool found = false;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(e->d_name, &end, 10);
    if (*end != '\0' || pid == 0 || pid > UINT32_MAX) continue;
    char comm[32] = {};
    const int fd = ::open((proc_root + "/" + e->d_name + "/comm").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = ::read(fd, comm, sizeof comm - 1);
    ::close(fd);
    // comm holds 15 bytes: "nvidia-cuda-mps" for the server and the daemon alike.
    if (n <= 0 || std::string_view(comm, static_cast<size_t>(n)).substr(0, 15) != "nvidia-cuda-mps") continue;
    if (file_name(real_exe(proc_root, static_cast<uint32_t>(pid))) == "nvidia-cuda-mps-control") {
      found = true;
      break;
    }
  }
  ::closedir(dir);
  return found;
}

bool InfrastructureJudge::is_infrastructure(const Workload& workload, const WorkloadNames& names,
                                            const std::vector<uint32_t>& pids) const {
  if (pids.empty()) return false;
  bool in_namespace = workload.kind == WorkloadKind::kKubernetes && !names.namespace_name.empty() &&
                      std::find(options_.namespaces.begin(), options_.namespaces.end(), names.namespace_name) !=
                          options_.namespaces.end();
  bool on_host = host_cgroup(workload);
  if (!in_namespace && !on_host) return false;
  for (uint32_t pid : pids) {
    std::string exe = real_exe(options_.proc_root, pid);
    if (exe.empty() || !is_mps_executable_name(file_name(exe))) return false;  // " (deleted)" fails too
    if (on_host && !in_namespace && !root_owned(options_.proc_root, pid)) return false;
  }
  return true;
}

}  // namespace gpuledger::identity
