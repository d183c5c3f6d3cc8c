#pragma once
// The CUDA driver entry points gpuledger probes, as data: which family, how its
// arguments are read, and whether its result is needed. Turning a library's
// symbols into concrete probes is plan_probes(); nothing here touches BPF.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_probes.h"
#include "probes/elf_symbols.h"

namespace gpuledger::probes {

struct EntryPointFamily {
  std::string_view base;   // the unversioned name, e.g. "cuMemcpyHtoD"
  gl_call_kind kind;
  uint8_t size_arg = 0;    // memcpy: argument index of the byte count; context: of the device
  gl_direction direction = GL_DIR_UNKNOWN;
  // The unsuffixed (v1) form predates 64-bit device pointers: cuMemAlloc and
  // friends take 32-bit pointers and sizes there.
  bool v1_is_32bit = false;
  gl_context_op context_op = GL_CTX_SET;  // GL_KIND_CONTEXT only
  // Versions whose argument layout moves size_arg: {version, argument index}.
  std::vector<std::pair<int, uint8_t>> size_arg_by_version = {};
  // GL_KIND_MEMSET only: the element size in bytes, | GL_MEMSET_2D for the 2D forms.
  uint8_t memset_shape = 0;
  // GL_KIND_SYNC and GL_KIND_QUERY only: what the call waits for (gl_sync_target).
  uint8_t sync_target = GL_SYNC_STREAM;
};

// The cookie's direction bits for a family: a context call's operation, a
// memset's shape, a wait's target, a copy's direction.
unsigned cookie_direction_bits(const EntryPointFamily& family);
// A copy family whose calls return only when done (no "Async" in the name):
// its cookies carry GL_COOKIE_SYNC_COPY_BIT.
bool synchronous_copy(const EntryPointFamily& family);

// What each family of entry points counts, in words, for `probe-plan` and the docs.
std::string_view family_counts(const EntryPointFamily& family);

// Every family gpuledger knows, in a fixed order.
const std::vector<EntryPointFamily>& entry_point_families();

// Gives each exact entry-point name (cuMemFree_v2, cuLaunchKernel_ptsz, ...) a
// small stable id: errors are counted in the kernel per id and named back here.
class CallNames {
 public:
  // Ids run from `first` up to (not including) `limit`: the driver's names
  // take the ids below GL_RUNTIME_CALL_BASE, the runtime's the ones above.
  explicit CallNames(uint32_t first = 0, uint32_t limit = GL_RUNTIME_CALL_BASE) : first_(first), limit_(limit) {}
  // Returns the id of `name`, assigning the next one; throws when ids run out.
  uint32_t id_of(const std::string& name);
  const std::string* name_of(uint32_t id) const;
  size_t size() const { return names_.size(); }
  // Ids an earlier agent handed out (call_name_map.h), kept as they were;
  // those outside this range are ignored. Before the first id_of.
  void restore(const std::map<uint32_t, std::string>& names);
  // Called with each id assigned from now on.
  void on_assign(std::function<void(uint32_t, const std::string&)> f) { on_assign_ = std::move(f); }

 private:
  uint32_t first_, limit_;
  std::map<std::string, uint32_t, std::less<>> ids_;
  std::vector<std::string> names_;  // by id - first_; "" where an id is unused
  std::function<void(uint32_t, const std::string&)> on_assign_;
};

// kRuntime: a CUDA runtime entry point (gl_rt_entry, and gl_rt_return with it).
enum class ProbeProgram { kLaunch, kCallEntry, kRuntime };

// One uprobe to attach: where, which program, with which cookie, and whether
// the return probe goes with it.
struct ProbeSpec {
  std::string name;
  uint64_t file_offset = 0;
  ProbeProgram program = ProbeProgram::kCallEntry;
  bool with_return = false;
  uint64_t cookie = 0;
};

struct ProbePlanOptions {
  // Launches are the hottest calls: by default they get one entry probe and
  // count attempts, and so do asynchronous copies and memsets (whose return
  // probe would only say they succeeded); with this, they are counted at
  // return, errors included.
  bool launch_returns = false;
  // False: the `billing` probe set (probe_sets.h) - no entry point called per
  // unit of work (launches, copies, memsets, waits, queries, event records).
  bool hot_path = true;
};

// The probes for one library, one per distinct address (aliases share one),
// of the families the options' probe set keeps.
std::vector<ProbeSpec> plan_probes(const std::vector<ElfFunction>& functions, CallNames& call_names,
                                   const ProbePlanOptions& options);

}  // namespace gpuledger::probes
