#pragma once
// Finding CUDA driver libraries by what they are, not what they are called:
// the places a host driver lives, every file a running process maps for
// execution (a periodic backstop scan), and a BPF watcher that reports each
// file as a process first maps it executable (the fast path). Whether a file
// is the driver is decided by its exported symbols (library_attacher.h).
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probes/mapped_file.h"

struct lib_discovery;

namespace gpuledger::probes {

std::optional<FileId> file_id_of(const std::string& path);

// A file some process maps for execution: a candidate for the driver.
struct LibraryCandidate {
  uint32_t pid = 0;
  Mapping mapping;
  std::string origin;  // "map" (the watcher), "maps" (the backstop scan)
  // The inode the mapping holds, from the kernel's VMA (watcher events only):
  // on overlayfs the backing layer's file, which is what a uprobe lands on.
  std::optional<FileId> mapped_file;
};

// Whether a file name looks like the driver's: only a fast path and a hint for
// `doctor` - a renamed copy is found by its symbols all the same.
bool is_cuda_library_name(const std::string& path);

// Where NVIDIA's installers and container toolkits put the driver library.
std::vector<std::string> default_driver_library_paths();

// Every executable file mapping of every running process, one per process and
// file.
std::vector<LibraryCandidate> scan_process_maps(const std::string& proc = "/proc");

// Continues every process in the map of held processes `map` (or pinned at
// `pin_path`) stopped more than `older_than_ns` ago (0: all) that is still the
// process that was stopped (same start time), and forgets them all. Returns
// how many were continued.
size_t continue_held_in(int map, uint64_t older_than_ns, const std::string& proc = "/proc");
size_t continue_pinned_held(const std::string& pin_path, const std::string& proc = "/proc");
// Where the agent pins the map of held processes under its --bpf-pin-dir.
std::string held_processes_pin_path(const std::string& pin_dir);

// The BPF watcher (bpf/lib_discovery.bpf.c).
class LibOpenWatcher {
 public:
  // `hold_new_drivers`: stop the first process mapping a never-seen file named
  // like the driver until the agent continues it (events say `held`). Only
  // while heartbeat() is fresh (2 s) is anyone held. `held_pin_path`: where
  // the map of held processes is pinned (reused when one is there), so an
  // agent that dies holding a process has its successor continue it; "" =
  // not pinned. Throws Error when it cannot load or attach.
  explicit LibOpenWatcher(bool hold_new_drivers = false, const std::string& held_pin_path = "");
  ~LibOpenWatcher();
  LibOpenWatcher(const LibOpenWatcher&) = delete;
  LibOpenWatcher& operator=(const LibOpenWatcher&) = delete;

  int events_fd() const;
  // Judged: stay quiet about it - except that each later mapping of a driver
  // is reported (as `driver`), since a process that maps the driver may hold
  // a CUDA runtime to probe (runtime_discovery.h).
  void remember(const FileId& id, bool is_driver);
  void forget(const FileId& id);    // report it again at its next mapping
  // The inode the kernel maps (and a uprobe lands on) for the open file `fd`:
  // itself, or on overlayfs its backing layer's file. Learnt by mapping it
  // executable in the agent for a moment, which the watcher answers without
  // a report. nullopt if it cannot be mapped (noexec mount, empty file).
  std::optional<FileId> identify(int fd);
  uint64_t events_dropped() const;

  // The agent's event loop is alive: holding is allowed for 2 s more.
  void heartbeat();
  // Nobody is held any more (the agent is going).
  void stop_holding();
  // `pid`, held, was continued by the agent.
  void released(uint32_t pid);
  // Continues (SIGCONT) every held process stopped more than `older_than_ns`
  // ago (0: all of them) that is still the process that was stopped (same
  // start time), and forgets them. Returns how many were continued.
  size_t continue_held(uint64_t older_than_ns, const std::string& proc = "/proc");

 private:
  lib_discovery* skel_ = nullptr;
};

}  // namespace gpuledger::probes
