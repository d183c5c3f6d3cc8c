#include "cgroup_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/error.h"
#include "identity/cgroup_fs.h"

namespace gpuledger::bench {
namespace fs = std::filesystem;

namespace {

// A cgroup directory can only be removed once its children are: depth first.
// A cgroup whose last process has just been reaped may still read as busy for
// a moment, hence the short retry.
void remove_cgroup_tree(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory(ec)) children.push_back(entry.path());
  for (const auto& child : children) remove_cgroup_tree(child);
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "warning: could not remove cgroup %s: %s\n", dir.c_str(), std::strerror(errno));
}

}  // namespace

BenchCgroups::BenchCgroups() {
  mount_ = identity::discover_cgroup_mounts().v2;
  if (mount_.empty()) throw Error("no cgroup2 mount in /proc/self/mountinfo: the benchmark needs cgroup v2");
  parent_ = mount_ + "/gpuledger-bench";
  remove_cgroup_tree(parent_);
  if (::mkdir(parent_.c_str(), 0755) != 0)
    throw Error("cannot create cgroup " + parent_ + ": " + std::strerror(errno));
}

BenchCgroups::~BenchCgroups() {
  move_self_to_noexcept(mount_.c_str());
  remove_cgroup_tree(parent_);
}

std::string BenchCgroups::make(const std::string& relative) const {
  fs::path dir = fs::path(parent_) / relative;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create cgroup " + dir.string() + ": " + ec.message());
  return dir.string();
}

void BenchCgroups::remove(const std::string& relative) const { remove_cgroup_tree(fs::path(parent_) / relative); }

void BenchCgroups::move_self_to(const std::string& dir) {
  if (!move_self_to_noexcept(dir.c_str()))
    throw Error("cannot move into cgroup " + dir + ": " + std::strerror(errno));
}

bool BenchCgroups::move_self_to_noexcept(const char* dir) {
  char path[4096];
  std::snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, "0", 1) == 1;  // "0": the writing process itself
  int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

}  // namespace gpuledger::bench
