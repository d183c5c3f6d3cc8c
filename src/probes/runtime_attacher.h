#pragma once
// Keeps runtime probes (--runtime-probes) on every file that holds the CUDA
// runtime: one attachment per distinct file (device + inode). Files without
// runtime entry points are remembered so each is read once.
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

namespace gpuledger::probes {

class RuntimeAttacher {
 public:
  explicit RuntimeAttacher(CudaProbeProgram& program) : program_(program) {}

  // Attaches to the candidate's file if it holds runtime entry points (in its
  // dynamic or static symbols) and is not covered yet. True when covered.
  bool offer(const LibraryCandidate& candidate);

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
  CudaProbeProgram& program_;
  mutable std::mutex mu_;
  CallNames call_names_{GL_RUNTIME_CALL_BASE, GL_MAX_CALLS};
  std::map<FileId, Entry> attached_;
  std::set<FileId> without_runtime_;
};

}  // namespace gpuledger::probes
