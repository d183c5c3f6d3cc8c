#pragma once
// Keeps runtime probes (--runtime-probes) on every file that holds the CUDA
// runtime: one attachment per distinct file (device + inode). Files without
// runtime entry points are remembered so each is read once. Like the driver's
// attacher, it reads and attaches only through a verified descriptor
// (probe_target.h): never through a path a tenant could swap. Its files live
// like the driver's (attached_file.h): at most `max_libraries` at once (a
// bound, a self-metric and a log line), detached once no process maps them
// and they are deleted, and attached again where probes are missing.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "probes/call_name_map.h"
#include "probes/cuda_entry_points.h"
#include "probes/cuda_probe_program.h"
#include "probes/library_attacher.h"
#include "probes/library_discovery.h"
#include "probes/probe_target.h"

namespace gpuledger::probes {

class RuntimeAttacher {
 public:
  // hot_path false: the billing probe set (probe_sets.h), rare calls only.
  RuntimeAttacher(CudaProbeProgram& program, LibOpenWatcher* watcher, std::string proc_root = "/proc",
                  size_t max_libraries = LibraryAttacher::kDefaultMaxLibraries, bool hot_path = true)
      : program_(program),
        watcher_(watcher),
        proc_root_(std::move(proc_root)),
        max_libraries_(max_libraries),
        hot_path_(hot_path) {
    keep_call_names_in(call_names_, program_.maps().call_names);  // ids in pinned error counters keep their names
  }

  // Attaches to the candidate's file if it holds runtime entry points (in its
  // dynamic or static symbols) and is not covered yet. True when covered.
  bool offer(const LibraryCandidate& candidate);
  // A host path named on the command line (--cuda-runtime-lib).
  bool offer(const std::string& path);

  std::vector<LibraryRecord> attached() const;
  size_t probes_attached() const;
  size_t probe_attach_failures() const;
  // After a backstop scan that saw every executable mapping on the node
  // (LibraryAttacher::detach_unused).
  void detach_unused(const std::vector<LibraryCandidate>& scanned);
  void retry_incomplete(std::chrono::steady_clock::time_point now);
  uint64_t libraries_detached() const;
  uint64_t limit_rejections() const;    // runtime files refused at max_libraries
  size_t libraries_incomplete() const;  // attached in part, retries spent
  // Files holding a statically linked CUDA runtime stripped of its symbol
  // table: found, and not probed (their entry points cannot be named).
  size_t stripped_runtimes() const;
  // As LibraryAttacher::set_hot_path, for the runtime's files.
  void set_hot_path(bool on);
  // The name of a runtime call id (GL_RUNTIME_CALL_BASE and up), if assigned.
  std::optional<std::string> call_name(uint32_t id) const;

 private:
  bool offer_target(ProbeTarget target, const std::string& origin, const std::optional<FileId>& printed);

  CudaProbeProgram& program_;
  LibOpenWatcher* watcher_;
  std::string proc_root_;
  mutable std::mutex mu_;
  CallNames call_names_{GL_RUNTIME_CALL_BASE, GL_MAX_CALLS};
  size_t max_libraries_;
  bool hot_path_;
  AttachedFiles attached_;
  std::map<FileId, FileId> attached_as_;  // a mapping's printed id -> the key it was attached as
  std::set<FileId> without_runtime_;
  std::set<FileId> stripped_;  // a subset of without_runtime_, bounded with it
  uint64_t detached_ = 0;
  uint64_t limit_rejections_ = 0;
};

}  // namespace gpuledger::probes
