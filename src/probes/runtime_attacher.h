#pragma once
// Keeps runtime probes (--runtime-probes) on every file that holds the CUDA
// runtime: one attachment per distinct file (device + inode). Files without
// runtime entry points are remembered so each is read once. Like the driver's
// attacher, it reads and attaches only through a verified descriptor
// (probe_target.h): never through a path a tenant could swap.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "probes/cuda_entry_points.h"
#include "probes/cuda_probe_program.h"
#include "probes/library_attacher.h"
#include "probes/library_discovery.h"
#include "probes/probe_target.h"

namespace gpuledger::probes {

class RuntimeAttacher {
 public:
  RuntimeAttacher(CudaProbeProgram& program, LibOpenWatcher* watcher, std::string proc_root = "/proc")
      : program_(program), watcher_(watcher), proc_root_(std::move(proc_root)) {}

  // Attaches to the candidate's file if it holds runtime entry points (in its
  // dynamic or static symbols) and is not covered yet. True when covered.
  bool offer(const LibraryCandidate& candidate);
  // A host path named on the command line (--cuda-runtime-lib).
  bool offer(const std::string& path);

  std::vector<LibraryRecord> attached() const;
  size_t probes_attached() const;
  size_t probe_attach_failures() const;
  // The name of a runtime call id (GL_RUNTIME_CALL_BASE and up), if assigned.
  std::optional<std::string> call_name(uint32_t id) const;

 private:
  struct Entry {
    LibraryRecord record;
    AttachedLibrary links;
  };
  bool offer_target(ProbeTarget target, const std::string& origin);

  CudaProbeProgram& program_;
  LibOpenWatcher* watcher_;
  std::string proc_root_;
  mutable std::mutex mu_;
  CallNames call_names_{GL_RUNTIME_CALL_BASE, GL_MAX_CALLS};
  std::map<FileId, Entry> attached_;
  std::set<FileId> without_runtime_;
};

}  // namespace gpuledger::probes
