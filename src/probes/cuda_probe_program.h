#pragma once
// Owns the loaded CUDA attribution program (bpf/cuda_probes.bpf.c) and attaches
// it, one set of uprobes per library file. One loaded program serves every
// library: the per-probe cookie tells the handlers which entry point fired.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probes/bpf_handles.h"
#include "probes/cuda_entry_points.h"
#include "probes/mapped_file.h"
#include "probes/pin_store.h"

struct cuda_probes;
struct bpf_program;

namespace gpuledger::probes {

struct ProbeProgramConfig {
  uint64_t cgroup_v2_root_id = 1;
  // css_set.subsys index of the v1 controller to key workloads by when a task
  // sits in the v2 root (cgroup v1 hosts); none disables the fallback.
  std::optional<uint32_t> v1_subsys_index;
  uint32_t max_workloads = 16384;
  uint32_t max_live_allocations = 262144;
  // One perf-event link per probe even where multi-uprobe links exist (the
  // path kernels before 6.6 take; selectable so that it stays tested).
  bool per_probe_links = false;
  // How runtime-level probes count (--runtime-probes); off attaches none.
  gl_runtime_mode runtime_mode = GL_RUNTIME_OFF;
  // Where the maps and links are pinned so they outlive the agent (pin_store.h);
  // none: they go with the agent.
  PinStore* pins = nullptr;
};

// The uprobes on one library file; detached when destroyed.
// The probes on one library file. Where the kernel has multi-uprobe links
// (Linux 6.6+), each program's probes on the file are one link: attached and
// detached at once. Elsewhere each probe is a perf-event link of its own, and
// detaching them one by one waits a kernel grace period each (~0.1 s).
// One probe point: a spec's entry, or its return.
struct ProbePart {
  ProbeSpec spec;
  bool retprobe = false;
};

struct AttachedLibrary {
  std::string path;
  size_t probes = 0;                   // probe points attached (entry and return count apart)
  std::vector<FdHandle> multi_links;   // one per program, multi-uprobe mode
  std::vector<LinkHandle> links;       // one per probe, perf-event mode
  std::vector<std::string> failures;  // "name: reason", of the last attempt
  std::vector<ProbePart> missing;     // the probe points not attached: what a retry attaches
  bool adopted = false;               // pinned links an earlier agent attached, taken over
  std::optional<FileId> pinned_as;    // the probed file its links are pinned for, once complete
  PinnedSet pinned_set = PinnedSet::kRare;  // which of the file's sets they are
};

struct BpfMapFds {
  int workload_counters = -1;
  int call_errors = -1;
  int live_allocations = -1;
  int processes = -1;
  int stats = -1;
  int context_devices = -1;
  int events = -1;
  int call_names = -1;
  int export_tables = -1;
  int open_spans = -1;
};

class CudaProbeProgram {
 public:
  explicit CudaProbeProgram(const ProbeProgramConfig& config);  // loads; throws Error
  ~CudaProbeProgram();
  CudaProbeProgram(const CudaProbeProgram&) = delete;
  CudaProbeProgram& operator=(const CudaProbeProgram&) = delete;

  // `pinned_as`: the probed file, whose links are pinned once all are in
  // place (and taken over from an earlier agent when it attached them all);
  // none: not pinned. `set`: which of the file's pinned sets these are.
  AttachedLibrary attach(const std::string& path, const std::vector<ProbeSpec>& specs,
                         std::optional<FileId> pinned_as = std::nullopt, PinnedSet set = PinnedSet::kRare);
  // Attaches what an earlier attach missed (lib.missing), adding to what it
  // holds: the probes in place are kept, so no call is counted twice.
  void attach_missing(AttachedLibrary& lib);
  // The links on a file are detached: their pins go too (one set, or both).
  void unpin(const FileId& file);
  void unpin(const FileId& file, PinnedSet set);
  // Test seam: when set, a probe point it returns true for fails to attach
  // (EAGAIN), as one does when its opener exits or the file is swapped mid-attach.
  void set_attach_fault_for_test(std::function<bool(const ProbePart&)> fault) { fault_ = std::move(fault); }
  BpfMapFds maps() const;
  uint32_t max_workloads() const { return config_.max_workloads; }
  uint32_t max_export_tables() const;  // the export-table map's capacity
  bool multi_uprobe() const { return multi_; }

 private:
  void load(bool multi);
  void attach_parts(AttachedLibrary& lib, const std::vector<ProbePart>& parts);
  void attach_multi(AttachedLibrary& lib, const std::vector<ProbePart>& parts);
  void attach_each(AttachedLibrary& lib, const std::vector<ProbePart>& parts);
  bpf_program* program_for(const ProbePart& part) const;
  // Names the program build and the settings baked into it (rodata, link
  // mode): links made by another are not taken over.
  std::string links_version() const;

  ProbeProgramConfig config_;
  cuda_probes* skel_ = nullptr;
  bool multi_ = false;
  std::function<bool(const ProbePart&)> fault_;
};

}  // namespace gpuledger::probes
