#include "probes/cuda_entry_points.h"

#include <set>

#include "common/error.h"

namespace gpuledger::probes {

const std::vector<EntryPointFamily>& entry_point_families() {
  static const std::vector<EntryPointFamily> families = {
      // Launches: cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra).
      {"cuLaunchKernel", GL_KIND_LAUNCH},
      {"cuLaunchCooperativeKernel", GL_KIND_LAUNCH},
      {"cuLaunchKernelEx", GL_KIND_LAUNCH_EX},
      {"cuGraphLaunch", GL_KIND_GRAPH},
      // Allocations: (CUdeviceptr *out, size_t bytes, ...).
      {"cuMemAlloc", GL_KIND_ALLOC, 0, GL_DIR_UNKNOWN, true},
      {"cuMemAllocManaged", GL_KIND_ALLOC},
      {"cuMemAllocAsync", GL_KIND_ALLOC},
      {"cuMemAllocFromPoolAsync", GL_KIND_ALLOC},
      {"cuMemCreate", GL_KIND_ALLOC},  // (handle *out, size_t size, prop, flags)
      {"cuMemAllocPitch", GL_KIND_ALLOC_PITCH, 0, GL_DIR_UNKNOWN, true},
      {"cuMemFree", GL_KIND_FREE, 0, GL_DIR_UNKNOWN, true},
      {"cuMemFreeAsync", GL_KIND_FREE},
      {"cuMemRelease", GL_KIND_FREE},
      // Copies: (dst, src, bytes[, stream]); peer: (dst, dstCtx, src, srcCtx, bytes[, stream]).
      {"cuMemcpyHtoD", GL_KIND_MEMCPY, 2, GL_DIR_HTOD, true},
      {"cuMemcpyDtoH", GL_KIND_MEMCPY, 2, GL_DIR_DTOH, true},
      {"cuMemcpyDtoD", GL_KIND_MEMCPY, 2, GL_DIR_DTOD, true},
      {"cuMemcpyHtoDAsync", GL_KIND_MEMCPY, 2, GL_DIR_HTOD, true},
      {"cuMemcpyDtoHAsync", GL_KIND_MEMCPY, 2, GL_DIR_DTOH, true},
      {"cuMemcpyDtoDAsync", GL_KIND_MEMCPY, 2, GL_DIR_DTOD, true},
      {"cuMemcpy", GL_KIND_MEMCPY, 2, GL_DIR_UNKNOWN},
      {"cuMemcpyAsync", GL_KIND_MEMCPY, 2, GL_DIR_UNKNOWN},
      {"cuMemcpyPeer", GL_KIND_MEMCPY, 4, GL_DIR_PEER},
      {"cuMemcpyPeerAsync", GL_KIND_MEMCPY, 4, GL_DIR_PEER},
      // Synchronisation: time between entry and return is time blocked.
      {"cuStreamSynchronize", GL_KIND_SYNC},
      {"cuCtxSynchronize", GL_KIND_SYNC},
      {"cuEventSynchronize", GL_KIND_SYNC},
      // Contexts: which device each thread's calls go to. cuCtxCreate takes
      // the device as (pctx, flags, dev) up to v2, (pctx, params, n, flags, dev)
      // in v3 and (pctx, params, flags, dev) in v4.
      {"cuCtxCreate", GL_KIND_CONTEXT, 2, GL_DIR_UNKNOWN, false, GL_CTX_CREATE, {{3, 4}, {4, 3}}},
      {"cuDevicePrimaryCtxRetain", GL_KIND_CONTEXT, 1, GL_DIR_UNKNOWN, false, GL_CTX_RETAIN},
      {"cuCtxSetCurrent", GL_KIND_CONTEXT, 0, GL_DIR_UNKNOWN, false, GL_CTX_SET},
      {"cuCtxPushCurrent", GL_KIND_CONTEXT, 0, GL_DIR_UNKNOWN, false, GL_CTX_PUSH},
      {"cuCtxPopCurrent", GL_KIND_CONTEXT, 0, GL_DIR_UNKNOWN, false, GL_CTX_POP},
      {"cuCtxDestroy", GL_KIND_CONTEXT, 0, GL_DIR_UNKNOWN, false, GL_CTX_DESTROY},
      // Set-up calls: their errors are worth counting, and they register the process.
      {"cuInit", GL_KIND_OTHER},
  };
  return families;
}

uint32_t CallNames::id_of(const std::string& name) {
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  if (first_ + names_.size() >= limit_) throw Error("too many distinct CUDA entry points to name: " + name);
  auto id = static_cast<uint32_t>(first_ + names_.size());
  ids_.emplace(name, id);
  names_.push_back(name);
  if (on_assign_) on_assign_(id, name);
  return id;
}

const std::string* CallNames::name_of(uint32_t id) const {
  return id >= first_ && id - first_ < names_.size() && !names_[id - first_].empty() ? &names_[id - first_] : nullptr;
}

void CallNames::restore(const std::map<uint32_t, std::string>& names) {
  for (const auto& [id, name] : names) {
    if (id < first_ || id >= limit_ || name.empty() || ids_.contains(name)) continue;
    if (id - first_ >= names_.size()) names_.resize(id - first_ + 1);  // a gap stays unused
    if (!names_[id - first_].empty()) continue;
    names_[id - first_] = name;
    ids_.emplace(name, id);
  }
}

namespace {

bool is_launch(gl_call_kind kind) {
  return kind == GL_KIND_LAUNCH || kind == GL_KIND_LAUNCH_EX || kind == GL_KIND_GRAPH;
}

ProbeSpec spec_for(const EntryPointFamily& family, const ElfFunction& fn, CallNames& call_names,
                   const ProbePlanOptions& options) {
  auto form = parse_entry_point_form(fn.name, family.base);
  bool legacy = family.v1_is_32bit && form && form->version == 1;
  uint8_t size_arg = family.size_arg;
  for (const auto& [version, arg] : family.size_arg_by_version)
    if (form && form->version == version) size_arg = arg;
  // Context calls carry their operation where copies carry a direction.
  unsigned dir_or_op = family.kind == GL_KIND_CONTEXT ? static_cast<unsigned>(family.context_op)
                                                      : static_cast<unsigned>(family.direction);
  ProbeSpec spec;
  spec.name = fn.name;
  spec.file_offset = fn.file_offset;
  spec.cookie = GL_MAKE_COOKIE(family.kind, call_names.id_of(fn.name), size_arg, dir_or_op, legacy ? 1 : 0);
  if (is_launch(family.kind) && !options.launch_returns) {
    spec.program = ProbeProgram::kLaunch;
    spec.with_return = false;
  } else {
    spec.program = ProbeProgram::kCallEntry;
    spec.with_return = true;
  }
  return spec;
}

}  // namespace

std::vector<ProbeSpec> plan_probes(const std::vector<ElfFunction>& functions, CallNames& call_names,
                                   const ProbePlanOptions& options) {
  std::vector<ProbeSpec> specs;
  std::set<uint64_t> offsets_taken;  // an alias shares its address: one probe, first name wins
  for (const auto& family : entry_point_families()) {
    for (const auto& fn : find_entry_point_forms(functions, family.base)) {
      if (!offsets_taken.insert(fn.file_offset).second) continue;
      specs.push_back(spec_for(family, fn, call_names, options));
    }
  }
  return specs;
}

}  // namespace gpuledger::probes
