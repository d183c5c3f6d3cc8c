#pragma once
// Decides which library files get probes and keeps them: one attachment per
// distinct file (device + inode), however many paths or processes lead to it.
// Everything offered from outside may be wrong (missing, not ELF, no CUDA in
// it): that is recorded and reported, never thrown.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "probes/cuda_entry_points.h"
#include "probes/cuda_probe_program.h"
#include "probes/library_discovery.h"

namespace gpuledger::probes {

struct LibraryRecord {
  std::string path;
  std::string origin;
  FileId file;
  size_t probes = 0;
  std::vector<std::string> probe_failures;
  std::string error;  // why it was not attached, if it was not
};

class LibraryAttacher {
 public:
  LibraryAttacher(CudaProbeProgram& program, ProbePlanOptions options, LibOpenWatcher* watcher);

  // Attaches to the file at `path` unless that file is already covered.
  // Returns true if the file is covered afterwards.
  bool offer(const std::string& path, const std::string& origin);
  bool offer(const LibraryCandidate& candidate);
  // Paths named on the command line or found at the driver's usual places are
  // watched: a file replaced there (a driver upgrade) is attached anew.
  void recheck_named_paths();

  std::vector<LibraryRecord> attached() const;
  std::vector<LibraryRecord> rejected() const;
  size_t probes_attached() const;
  size_t probe_attach_failures() const;
  std::string call_name(uint32_t id) const;

 private:
  struct Entry {
    LibraryRecord record;
    AttachedLibrary links;
  };
  std::optional<FileId> probed_file(const LibraryCandidate& candidate);
  void reject(const std::string& path, const std::string& origin, const std::string& why, const FileId& file = {});

  CudaProbeProgram& program_;
  ProbePlanOptions options_;
  LibOpenWatcher* watcher_;
  mutable std::mutex mu_;
  CallNames call_names_;
  std::map<FileId, Entry> attached_;
  std::map<std::string, LibraryRecord> rejected_;  // by path
  std::map<std::string, std::string> named_paths_;  // path -> origin
};

}  // namespace gpuledger::probes
