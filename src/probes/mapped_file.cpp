#include "probes/mapped_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

namespace gpuledger::probes {
namespace {

std::optional<FileId> fd_id(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return file_id_from_stat(st);
}

std::string id_text(const FileId& id) {
  return "dev " + std::to_string(id.dev) + " inode " + std::to_string(id.ino);
}

// "fe:01" -> kernel dev encoding.
std::optional<uint64_t> parse_dev(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  try {
    uint64_t maj = std::stoull(text.substr(0, colon), nullptr, 16);
    uint64_t min = std::stoull(text.substr(colon + 1), nullptr, 16);
    return (maj << 20) | min;
  } catch (...) {
    return std::nullopt;
  }
}

int openat2_in_root(int root_fd, const std::string& path) {
  struct open_how how {};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof(how)));
}

}  // namespace

FileId file_id_from_stat(const struct stat& st) {
  return FileId{(static_cast<uint64_t>(major(st.st_dev)) << 20) | minor(st.st_dev), st.st_ino};
}

bool is_overlayfs_fd(int fd) {
  constexpr long kOverlayfsMagic = 0x794c7630;
  struct statfs sfs {};
  return ::fstatfs(fd, &sfs) == 0 && sfs.f_type == kOverlayfsMagic;
}

std::vector<Mapping> parse_exec_mappings(const std::string& maps_text, std::optional<uint64_t> at) {
  std::vector<Mapping> out;
  std::set<FileId> seen;
  // Most lines map data, not code: the perms field is looked at first, and
  // only executable lines are parsed (an idle node's scans are mostly this).
  for (size_t at_line = 0; at_line < maps_text.size();) {
    size_t eol = maps_text.find('\n', at_line);
    if (eol == std::string::npos) eol = maps_text.size();
    const std::string_view view(maps_text.data() + at_line, eol - at_line);
    at_line = eol + 1;
    const size_t space = view.find(' ');
    if (space == std::string_view::npos || view.size() < space + 4 || view[space + 3] != 'x') continue;
    const std::string line(view);
    // address perms offset dev inode pathname
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode;
    if (!(fields >> range >> perms >> offset >> dev >> inode)) continue;
    if (perms.size() < 3 || perms[2] != 'x') continue;
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;  // anonymous, [vdso], ...
    Mapping m;
    m.range = range;
    auto parsed_dev = parse_dev(dev);
    if (!parsed_dev) continue;
    try {
      m.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
      m.printed = FileId{*parsed_dev, std::stoull(inode)};
    } catch (...) {
      continue;
    }
    if (at && m.start != *at) continue;
    m.path = line.substr(slash);
    if (m.path.ends_with(" (deleted)")) {
      m.path.resize(m.path.size() - 10);
      m.deleted = true;
    }
    if (seen.insert(m.printed).second) out.push_back(std::move(m));
  }
  return out;
}

std::vector<Mapping> exec_mappings(const std::string& proc, uint32_t pid, std::optional<uint64_t> at) {
  std::string text;
  UniqueFd fd(::open((proc + "/" + std::to_string(pid) + "/maps").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  // Bounded: vm.max_map_count (65530 by default) lines of ~100 bytes fit
  // well within it; a process past it has its first mappings read.
  constexpr size_t kMaxMapsBytes = 16 << 20;
  char buf[65536];
  for (ssize_t n; text.size() < kMaxMapsBytes && (n = ::read(fd.get(), buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  return parse_exec_mappings(text, at);
}

std::optional<OpenedFile> open_mapped_file(const std::string& proc, uint32_t pid, const Mapping& m,
                                           const std::optional<FileId>& kernel_id, std::string& why) {
  const std::string base = proc + "/" + std::to_string(pid);
  OpenedFile out;
  out.label = "pid " + std::to_string(pid) + ": " + m.path;

  // The mapped file itself: no path of the tenant's is walked.
  UniqueFd fd(::open((base + "/map_files/" + m.range).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.valid()) {
    auto id = fd_id(fd.get());
    if (!id) {
      why = "the mapping at " + m.range + " is not a regular file";
      return std::nullopt;
    }
    out.on_overlay = is_overlayfs_fd(fd.get());
    // On overlayfs map_files gives the overlay inode (what the process sees);
    // the kernel reported the backing one: the caller has the kernel name it.
    if (kernel_id && *id != *kernel_id && !out.on_overlay) {
      why = "the mapping at " + m.range + " now holds another file (" + id_text(*id) + ", not " +
            id_text(*kernel_id) + "): unmapped and remapped";
      return std::nullopt;
    }
    out.id = *id;
    out.fd = std::move(fd);
    return out;
  }
  if (errno != EPERM && errno != EACCES) {
    why = std::string(kGone) + "the mapping at " + m.range + " (" + std::strerror(errno) + ")";
    return std::nullopt;
  }

  // Without the capability map_files needs: the path, resolved inside the
  // process's root so no symlink (absolute or not) or ".." leads out of it,
  // and accepted only when it is the mapped inode.
  if (m.deleted) {
    why = m.path + " was deleted after it was mapped (map_files would reach it: needs CAP_CHECKPOINT_RESTORE)";
    return std::nullopt;
  }
  UniqueFd root(::open((base + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) {
    why = std::string("cannot open the process's root: ") + std::strerror(errno);
    return std::nullopt;
  }
  fd = UniqueFd(openat2_in_root(root.get(), m.path));
  if (!fd.valid()) {
    why = "cannot open " + m.path + " inside the process's root: " + std::strerror(errno);
    return std::nullopt;
  }
  auto id = fd_id(fd.get());
  const FileId expected = kernel_id.value_or(m.printed);
  if (!id || (*id != m.printed && *id != expected)) {
    why = m.path + " inside the process's root is not the file it mapped (" +
          (id ? id_text(*id) : std::string("not a regular file")) + ", mapped " + id_text(m.printed) +
          "): replaced or swapped since";
    return std::nullopt;
  }
  out.id = *id;
  out.on_overlay = is_overlayfs_fd(fd.get());
  out.fd = std::move(fd);
  return out;
}

std::optional<OpenedFile> open_named_file(const std::string& path, std::string& why) {
  OpenedFile out;
  out.label = path;
  out.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!out.fd.valid()) {
    why = errno == ENOENT ? "no such file" : std::string("cannot open: ") + std::strerror(errno);
    return std::nullopt;
  }
  auto id = fd_id(out.fd.get());
  if (!id) {
    why = "not a regular file";
    return std::nullopt;
  }
  out.id = *id;
  out.on_overlay = is_overlayfs_fd(out.fd.get());
  return out;
}

}  // namespace gpuledger::probes
