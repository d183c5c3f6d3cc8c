#pragma once
// Decides which files get probes and keeps them: one attachment per distinct
// file (device + inode of what the kernel probes), however many paths or
// processes lead to it. A file is the CUDA driver when its exported symbols
// say so - its name is not asked, so a renamed copy is probed like
// libcuda.so.1. Everything offered from outside may be wrong or hostile
// (missing, swapped, not ELF, no CUDA in it): that is recorded and reported,
// never thrown; files are read and attached only through a descriptor whose
// inode was checked (mapped_file.h).
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "probes/attached_file.h"
#include "probes/cuda_entry_points.h"
#include "probes/cuda_probe_program.h"
#include "probes/elf_symbols.h"
#include "probes/library_discovery.h"
#include "probes/probe_target.h"

namespace gpuledger::probes {

// Whether the exported functions are the CUDA driver API's own (cuInit and
// cuDriverGetVersion, which every driver since CUDA 2 exports), not merely
// some name that starts with "cu".
bool exports_driver_api(const std::vector<ElfFunction>& functions);

class LibraryAttacher {
 public:
  // How many files judged not to be the driver are remembered (by inode) so a
  // node's every shared library is read once, not at every scan.
  static constexpr size_t kJudgedFilesBound = 65536;
  static constexpr size_t kRejectedBound = 256;

  // At most `max_libraries` files are probed at once (each holds ~100 probes
  // and a descriptor): a tenant making endless driver copies meets a bound,
  // a self-metric and a log line, not an agent out of descriptors.
  static constexpr size_t kDefaultMaxLibraries = 256;

  LibraryAttacher(CudaProbeProgram& program, ProbePlanOptions options, LibOpenWatcher* watcher,
                  std::string proc_root = "/proc", size_t max_libraries = kDefaultMaxLibraries);

  // A host path named on the command line ("cli") or a driver install path
  // ("host"). Returns true if the file is covered afterwards.
  bool offer(const std::string& path, const std::string& origin);
  // A file some process maps for execution.
  bool offer(const LibraryCandidate& candidate);
  // Paths named on the command line or found at the driver's usual places are
  // watched: a file replaced there (a driver upgrade) is attached anew.
  void recheck_named_paths();

  std::vector<LibraryRecord> attached() const;
  std::set<FileId> attached_files() const;  // their keys: what the runtime's discovery looks for
  std::vector<LibraryRecord> rejected() const;
  size_t probes_attached() const;
  size_t probe_attach_failures() const;
  size_t files_judged() const;            // distinct files read and found not to be the driver
  bool judged(const FileId& file) const;  // attached, or known not to be the driver
  // After a backstop scan that saw every executable mapping on the node:
  // detaches libraries no process maps any more whose file is deleted (an
  // image removed, a copy gone), so their probes and descriptor go and a
  // runtime's garbage collection can free the file. Named paths stay.
  void detach_unused(const std::vector<LibraryCandidate>& scanned);
  uint64_t libraries_detached() const;
  uint64_t limit_rejections() const;  // copies refused at max_libraries
  // A file where only some probes attached (its opener exited, or the file
  // was swapped, mid-attach) is attached again, what is missing only, with
  // backoff (AttachedFile::kRetryFirst, doubling) until complete or
  // AttachedFile::kAttachRetries are spent.
  void retry_incomplete(std::chrono::steady_clock::time_point now);
  size_t libraries_incomplete() const;  // attached in part, retries spent
  std::string call_name(uint32_t id) const;
  // The probe set's switch (probe_sets.h): attaches the hot path's probes to
  // every file (on) or detaches them (off); files attached later follow it.
  // The rare calls' probes, and every count, stay in place.
  void set_hot_path(bool on);

 private:
  // Reads and attaches the target's file (already verified) under its key,
  // the inode the kernel will probe. `quiet`: a file that is not the driver is no news.
  bool judge(ProbeTarget& target, const std::string& origin, bool quiet);
  void reject(const std::string& path, const std::string& origin, const std::string& why, const FileId& file = {});
  void remember_judged(const FileId& key);

  CudaProbeProgram& program_;
  ProbePlanOptions options_;
  LibOpenWatcher* watcher_;
  std::string proc_root_;
  mutable std::mutex mu_;
  CallNames call_names_;
  AttachedFiles attached_;
  std::map<std::string, LibraryRecord> rejected_;  // by path, at most kRejectedBound
  std::set<FileId> not_driver_;                   // at most kJudgedFilesBound
  std::map<FileId, FileId> printed_judged_;       // maps ids the backstop already looked at -> key
  size_t max_libraries_;
  uint64_t detached_ = 0;
  uint64_t limit_rejections_ = 0;
  std::map<std::string, std::string> named_paths_;  // path -> origin
};

}  // namespace gpuledger::probes
