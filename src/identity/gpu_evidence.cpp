#include "identity/gpu_evidence.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace gpuledger::identity {

namespace {

// A /proc/PID/fd entry's descriptor number; nullopt for ".", ".." or anything else.
std::optional<unsigned> fd_number(const char* name) {
  unsigned n = 0;
  const char* end = name + std::strlen(name);
  auto [p, ec] = std::from_chars(name, end, n);
  if (ec != std::errc() || p != end || p == name) return std::nullopt;
  return n;
}

}  // namespace

std::vector<unsigned> read_open_gpu_minors(const std::string& proc_root, unsigned pid, FdScanCursor& cursor,
                                           size_t max_examined) {
  std::vector<unsigned> out;
  cursor.truncated = false;
  const std::string dir = proc_root + "/" + std::to_string(pid) + "/fd";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0) return out;
  // procfs lists descriptors in ascending order from the directory offset
  // (descriptor + 2): the listing starts at the cursor and can stop once it
  // has more than the bound. Another file system (a test's fake /proc) lists
  // in its own order: there every entry is listed and the numbers sorted.
  struct statfs fs {};
  const bool procfs = ::fstatfs(dfd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
  if (procfs && cursor.next_fd > 0) ::lseek(dfd, static_cast<off_t>(cursor.next_fd) + 2, SEEK_SET);
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return out;
  }
  // Listing costs no stat: only the numbers, from the cursor on.
  std::vector<unsigned> fds;
  while (auto* e = ::readdir(d)) {
    const auto fd = fd_number(e->d_name);
    if (!fd || *fd < cursor.next_fd) continue;
    fds.push_back(*fd);
    if (procfs && fds.size() > max_examined) break;
  }
  if (!procfs) std::sort(fds.begin(), fds.end());
  const size_t examined = std::min(fds.size(), max_examined);
  for (size_t i = 0; i < examined; ++i) {
    // The open file itself (the /proc fd entry's target), not a name in anyone's namespace.
    struct stat st {};
    if (::fstatat(::dirfd(d), std::to_string(fds[i]).c_str(), &st, 0) != 0 || !S_ISCHR(st.st_mode)) continue;
    if (major(st.st_rdev) == kNvidiaMajor && minor(st.st_rdev) <= 247) out.push_back(minor(st.st_rdev));
  }
  ::closedir(d);
  cursor.truncated = fds.size() > max_examined;  // the bound: the next call goes on from the first not looked at
  cursor.next_fd = cursor.truncated ? fds[max_examined] : 0;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<unsigned> read_open_gpu_minors(const std::string& proc_root, unsigned pid) {
  FdScanCursor cursor;
  return read_open_gpu_minors(proc_root, pid, cursor);
}

GpuChoice choose_gpu(const std::optional<GpuIdentity>& hint, const std::set<std::string>& held,
                     const std::vector<GpuIdentity>& inventory) {
  auto known = [&](const std::string& uuid) -> GpuIdentity {
    for (const auto& g : inventory)
      if (g.uuid == uuid) return g;
    return {std::nullopt, uuid, std::nullopt};
  };
  if (hint && hint->uuid.rfind("GPU-", 0) != 0) return {hint, "environment", false};  // MIG: see above
  if (held.empty()) return {hint, hint ? "environment" : "", false};
  if (hint && held.contains(hint->uuid)) return {hint, "device", false};
  // The device side alone, or against the environment: it wins when it names
  // one GPU; more than one cannot say which the ordinal is.
  GpuChoice c;
  c.disagreed = hint.has_value();
  if (held.size() == 1) {
    c.gpu = known(*held.begin());
    c.source = "device";
  }
  return c;
}

}  // namespace gpuledger::identity
