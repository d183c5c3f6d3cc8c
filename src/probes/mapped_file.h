#pragma once
// Opening a file a tenant's process maps, as a root process may: exactly the
// inode the process mapped, or nothing. A tenant controls its paths, its
// mounts and its symlinks, and can swap any of them between two looks; so the
// file is resolved once, as a descriptor, its identity is checked against what
// the kernel says is mapped, and everything after (reading its ELF, attaching
// uprobes) goes through that descriptor - never through a path again.
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace gpuledger::probes {

// A file's identity as the kernel encodes it (dev = major << 20 | minor).
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
  auto operator<=>(const FileId&) const = default;
};
FileId file_id_from_stat(const struct stat& st);

// One executable file mapping of a process, as /proc/PID/maps prints it.
struct Mapping {
  std::string range;  // "start-end" in hex, the name /proc/PID/map_files uses
  uint64_t start = 0;
  FileId printed;     // dev:inode column (on overlayfs, kernels differ in which inode)
  std::string path;   // as the process sees it; " (deleted)" removed
  bool deleted = false;
};

// Parses /proc/PID/maps text: executable, file-backed mappings only, one per
// distinct (dev, inode), in address order.
// With `at`, only the mapping that starts there (what a watcher event names).
std::vector<Mapping> parse_exec_mappings(const std::string& maps_text, std::optional<uint64_t> at = std::nullopt);
std::vector<Mapping> exec_mappings(const std::string& proc, uint32_t pid, std::optional<uint64_t> at = std::nullopt);

inline constexpr const char* kGone = "gone: ";

struct OpenedFile {
  UniqueFd fd;
  FileId id;            // fstat of fd
  bool on_overlay = false;  // fd is an overlayfs inode (not what a uprobe lands on)
  std::string label;    // for logs and the API: "pid 42: /usr/lib/libcuda.so.1"
  // The path the kernel resolves to this very file (a magic link), for the
  // uprobe attach calls that take a path.
  std::string attach_path() const { return "/proc/self/fd/" + std::to_string(fd.get()); }
};

// The file process `pid` maps at `m`. First through /proc/PID/map_files (the
// mapped file itself, backing layer included; needs CAP_CHECKPOINT_RESTORE or
// CAP_SYS_ADMIN), else by `m.path` resolved inside the process's own root
// (openat2 RESOLVE_IN_ROOT: no symlink or ".." escapes it) and accepted only
// when its inode is the mapping's. `kernel_id`, when the kernel reported the
// mapped inode itself, must match what map_files gives. nullopt and `why` when
// the file cannot be had exactly; `why` starts with kGone when the process or
// its mapping is simply gone (no news: short-lived processes end).
std::optional<OpenedFile> open_mapped_file(const std::string& proc, uint32_t pid, const Mapping& m,
                                           const std::optional<FileId>& kernel_id, std::string& why);

// A host path an administrator named (--cuda-lib, the driver's install paths):
// host paths are root's, so symlinks are followed, but it is still opened once
// and used through the descriptor.
std::optional<OpenedFile> open_named_file(const std::string& path, std::string& why);

bool is_overlayfs_fd(int fd);

}  // namespace gpuledger::probes
