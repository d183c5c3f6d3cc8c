#pragma once
// Finding CUDA driver libraries: the places a host driver lives, the
// libraries processes have mapped (a periodic backstop scan), and a BPF watcher
// that reports each libcuda file as a process opens it (the fast path).
#include <sys/stat.h>

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct lib_discovery;

namespace gpuledger::probes {

// A file's identity as the kernel encodes it (dev = major << 20 | minor).
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
  auto operator<=>(const FileId&) const = default;
};
FileId file_id_from_stat(const struct stat& st);
std::optional<FileId> file_id_of(const std::string& path);

struct LibraryCandidate {
  std::string path;    // a path the agent can open (through /proc/PID/root for containers)
  std::string origin;  // "cli", "host", "maps", "open"
  uint32_t pid = 0;
  // The file a uprobe on `path` lands on, when it is not the path's own
  // inode: on overlayfs the kernel probes the backing file (see
  // overlay_backing.h), and two containers of one image share it.
  std::optional<FileId> probed_file;
};

// Whether `path` is on overlayfs, where its inode is not the probed one.
bool on_overlayfs(const std::string& path);

// Where NVIDIA's installers and container toolkits put the driver library.
std::vector<std::string> default_driver_library_paths();

// A library at `path` as process `pid` sees it: reachable through its root,
// or through the backing file when it is on overlayfs.
LibraryCandidate candidate_in_process(const std::string& proc, uint32_t pid, const std::string& path,
                                      const std::string& origin);

// Every libcuda mapped by a running process, reached through that process's
// root so copies inside containers resolve.
std::vector<LibraryCandidate> scan_process_maps(const std::string& proc = "/proc");

// A path through which the agent can open the file `id` that process `pid`
// has open or mapped right now: used when the watcher reports an open.
std::optional<LibraryCandidate> find_process_file(const std::string& proc, uint32_t pid, const FileId& id);

// The BPF watcher (bpf/lib_discovery.bpf.c).
class LibOpenWatcher {
 public:
  LibOpenWatcher();  // throws Error when it cannot load or attach
  ~LibOpenWatcher();
  LibOpenWatcher(const LibOpenWatcher&) = delete;
  LibOpenWatcher& operator=(const LibOpenWatcher&) = delete;

  int events_fd() const;
  void remember(const FileId& id);  // reported and handled: stay quiet about it
  void forget(const FileId& id);    // report it again at its next open
  uint64_t events_dropped() const;

 private:
  lib_discovery* skel_ = nullptr;
};

}  // namespace gpuledger::probes
