#include "probes/cuda_entry_points.h"

#include <set>

#include "common/error.h"
#include "probes/probe_sets.h"

namespace gpuledger::probes {

const std::vector<EntryPointFamily>& entry_point_families() {
  static const std::vector<EntryPointFamily> families = {
      // Launches: cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra).
      {"cuLaunchKernel", GL_KIND_LAUNCH},
      {"cuLaunchCooperativeKernel", GL_KIND_LAUNCH},
      {"cuLaunchKernelEx", GL_KIND_LAUNCH_EX},
      {"cuGraphLaunch", GL_KIND_GRAPH},
      // Legacy launches, still served by the driver: cuLaunch(f) runs a 1x1
      // grid, cuLaunchGrid[Async](f, w, h[, stream]) a w x h one (size_arg 1:
      // the grid is in arguments 1 and 2), with the block cuFuncSetBlockShape set.
      {"cuLaunch", GL_KIND_LAUNCH_LEGACY, 0},
      {"cuLaunchGrid", GL_KIND_LAUNCH_LEGACY, 1},
      {"cuLaunchGridAsync", GL_KIND_LAUNCH_LEGACY, 1},
      {"cuFuncSetBlockShape", GL_KIND_BLOCK_SHAPE},
      // (CUDA_LAUNCH_PARAMS *list, unsigned numDevices, flags): one launch per entry.
      {"cuLaunchCooperativeKernelMultiDevice", GL_KIND_LAUNCH_MULTI},
      // Allocations: (CUdeviceptr *out, size_t bytes, ...).
      {"cuMemAlloc", GL_KIND_ALLOC, 0, GL_DIR_UNKNOWN, true},
      {"cuMemAllocManaged", GL_KIND_ALLOC},
      {"cuMemAllocAsync", GL_KIND_ALLOC},
      {"cuMemAllocFromPoolAsync", GL_KIND_ALLOC},
      {"cuMemCreate", GL_KIND_ALLOC},  // (handle *out, size_t size, prop, flags)
      {"cuMemAllocPitch", GL_KIND_ALLOC_PITCH, 0, GL_DIR_UNKNOWN, true},
      // Arrays: (CUarray *out, const descriptor *[, levels]); bytes from the descriptor.
      {"cuArrayCreate", GL_KIND_ARRAY_CREATE, GL_ARRAY_2D, GL_DIR_UNKNOWN, true},
      {"cuArray3DCreate", GL_KIND_ARRAY_CREATE, GL_ARRAY_3D, GL_DIR_UNKNOWN, true},
      {"cuMipmappedArrayCreate", GL_KIND_ARRAY_CREATE, GL_ARRAY_MIPMAP},
      {"cuMemFree", GL_KIND_FREE, 0, GL_DIR_UNKNOWN, true},
      {"cuMemFreeAsync", GL_KIND_FREE},
      {"cuMemRelease", GL_KIND_FREE},
      {"cuArrayDestroy", GL_KIND_FREE},  // the CUarray handle is a pointer in every form
      {"cuMipmappedArrayDestroy", GL_KIND_FREE},
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
      // Array copies: arrays are device memory. AtoH(dstHost, srcArray, srcOffset,
      // bytes[, stream]), HtoA(dstArray, dstOffset, srcHost, bytes[, stream]),
      // AtoD(dstDevice, srcArray, srcOffset, bytes), DtoA(dstArray, dstOffset,
      // srcDevice, bytes), AtoA(dstArray, dstOffset, srcArray, srcOffset, bytes).
      {"cuMemcpyAtoH", GL_KIND_MEMCPY, 3, GL_DIR_DTOH, true},
      {"cuMemcpyAtoHAsync", GL_KIND_MEMCPY, 3, GL_DIR_DTOH, true},
      {"cuMemcpyHtoA", GL_KIND_MEMCPY, 3, GL_DIR_HTOD, true},
      {"cuMemcpyHtoAAsync", GL_KIND_MEMCPY, 3, GL_DIR_HTOD, true},
      {"cuMemcpyAtoD", GL_KIND_MEMCPY, 3, GL_DIR_DTOD, true},
      {"cuMemcpyDtoA", GL_KIND_MEMCPY, 3, GL_DIR_DTOD, true},
      {"cuMemcpyAtoA", GL_KIND_MEMCPY, 4, GL_DIR_DTOD, true},
      // Copies described by a struct (bytes and direction read from it; the
      // unsuffixed forms take the 32-bit _v1 structs).
      {"cuMemcpy2D", GL_KIND_MEMCPY_2D, 0, GL_DIR_UNKNOWN, true},
      {"cuMemcpy2DAsync", GL_KIND_MEMCPY_2D, 0, GL_DIR_UNKNOWN, true},
      {"cuMemcpy2DUnaligned", GL_KIND_MEMCPY_2D, 0, GL_DIR_UNKNOWN, true},
      {"cuMemcpy3D", GL_KIND_MEMCPY_3D, 0, GL_DIR_UNKNOWN, true},
      {"cuMemcpy3DAsync", GL_KIND_MEMCPY_3D, 0, GL_DIR_UNKNOWN, true},
      {"cuMemcpy3DPeer", GL_KIND_MEMCPY_3D_PEER, 0, GL_DIR_PEER},
      {"cuMemcpy3DPeerAsync", GL_KIND_MEMCPY_3D_PEER, 0, GL_DIR_PEER},
      // Batches (CUDA 12.8+): the sum of the sizes, or of the extents.
      {"cuMemcpyBatchAsync", GL_KIND_MEMCPY_BATCH},
      {"cuMemcpy3DBatchAsync", GL_KIND_MEMCPY_3D_BATCH},
      // Memsets: (dst, value, count[, stream]) and (dst, pitch, value, width, height[, stream]).
      {"cuMemsetD8", GL_KIND_MEMSET, 2, GL_DIR_UNKNOWN, true, GL_CTX_SET, {}, 1},
      {"cuMemsetD16", GL_KIND_MEMSET, 2, GL_DIR_UNKNOWN, true, GL_CTX_SET, {}, 2},
      {"cuMemsetD32", GL_KIND_MEMSET, 2, GL_DIR_UNKNOWN, true, GL_CTX_SET, {}, 4},
      {"cuMemsetD8Async", GL_KIND_MEMSET, 2, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 1},
      {"cuMemsetD16Async", GL_KIND_MEMSET, 2, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 2},
      {"cuMemsetD32Async", GL_KIND_MEMSET, 2, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 4},
      {"cuMemsetD2D8", GL_KIND_MEMSET, 3, GL_DIR_UNKNOWN, true, GL_CTX_SET, {}, 1 | GL_MEMSET_2D},
      {"cuMemsetD2D16", GL_KIND_MEMSET, 3, GL_DIR_UNKNOWN, true, GL_CTX_SET, {}, 2 | GL_MEMSET_2D},
      {"cuMemsetD2D32", GL_KIND_MEMSET, 3, GL_DIR_UNKNOWN, true, GL_CTX_SET, {}, 4 | GL_MEMSET_2D},
      {"cuMemsetD2D8Async", GL_KIND_MEMSET, 3, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 1 | GL_MEMSET_2D},
      {"cuMemsetD2D16Async", GL_KIND_MEMSET, 3, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 2 | GL_MEMSET_2D},
      {"cuMemsetD2D32Async", GL_KIND_MEMSET, 3, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 4 | GL_MEMSET_2D},
      // Synchronisation: time between entry and return is time blocked.
      // Each ends the busy spans of the work it waited for (gl_sync_target).
      {"cuStreamSynchronize", GL_KIND_SYNC},
      {"cuCtxSynchronize", GL_KIND_SYNC, 0, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 0, GL_SYNC_CONTEXT},
      {"cuEventSynchronize", GL_KIND_SYNC, 0, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 0, GL_SYNC_EVENT},
      // Completion by polling: CUDA_SUCCESS says the work before it is done.
      {"cuStreamQuery", GL_KIND_QUERY},
      {"cuEventQuery", GL_KIND_QUERY, 0, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 0, GL_SYNC_EVENT},
      // (event, stream): the stream a later wait on the event waits for.
      {"cuEventRecord", GL_KIND_EVENT_RECORD},
      {"cuEventRecordWithFlags", GL_KIND_EVENT_RECORD},
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
      // Undocumented driver tables a runtime asks for: counted by table id.
      {"cuGetExportTable", GL_KIND_EXPORT_TABLE},
  };
  return families;
}

std::string_view family_counts(const EntryPointFamily& family) {
  switch (family.kind) {
    case GL_KIND_LAUNCH:
    case GL_KIND_LAUNCH_EX:
      return "a launch, and its grid x block threads";
    case GL_KIND_LAUNCH_LEGACY:
      return "a launch, and its grid x the block cuFuncSetBlockShape set (1 when none was seen)";
    case GL_KIND_LAUNCH_MULTI:
      return "one launch per device in its list (at most 16), each with its grid x block threads";
    case GL_KIND_GRAPH:
      return "a graph launch";
    case GL_KIND_BLOCK_SHAPE:
      return "nothing: the block it sets is kept for the legacy launches";
    case GL_KIND_ALLOC:
    case GL_KIND_ALLOC_PITCH:
      return "an allocation and its bytes, live until freed";
    case GL_KIND_ARRAY_CREATE:
      return "an allocation of the array's data bytes (width x height x depth x channels x element size)";
    case GL_KIND_FREE:
      return "the freeing of what its allocation counted";
    case GL_KIND_MEMCPY:
      return "a copy and its bytes, by direction";
    case GL_KIND_MEMCPY_2D:
    case GL_KIND_MEMCPY_3D:
      return "a copy of WidthInBytes x Height [x Depth] bytes, its direction from the memory types";
    case GL_KIND_MEMCPY_3D_PEER:
      return "a peer copy of WidthInBytes x Height x Depth bytes";
    case GL_KIND_MEMCPY_BATCH:
    case GL_KIND_MEMCPY_3D_BATCH:
      return "a copy of the batch's summed sizes (at most 4096 entries read), direction unknown";
    case GL_KIND_MEMSET:
      return "a memset and its bytes (elements x element size)";
    case GL_KIND_SYNC:
      return "a synchronisation, the time blocked in it; it ends the busy spans of the work it waited for";
    case GL_KIND_QUERY:
      return "nothing when not ready; CUDA_SUCCESS ends the busy spans of the work it asked about";
    case GL_KIND_EVENT_RECORD:
      return "nothing: the stream a later wait on the event waits for";
    case GL_KIND_CONTEXT:
      return "nothing: which device the thread's calls go to";
    case GL_KIND_EXPORT_TABLE:
      return "a request for the table id it names";
    default:
      return "its errors, and the process";
  }
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

unsigned cookie_direction_bits(const EntryPointFamily& family) {
  switch (family.kind) {
    case GL_KIND_CONTEXT: return family.context_op;
    case GL_KIND_MEMSET: return family.memset_shape;
    case GL_KIND_SYNC:
    case GL_KIND_QUERY: return family.sync_target;
    default: return family.direction;
  }
}

bool synchronous_copy(const EntryPointFamily& family) {
  switch (family.kind) {
    case GL_KIND_MEMCPY:
    case GL_KIND_RT_MEMCPY:
    case GL_KIND_MEMCPY_2D:
    case GL_KIND_MEMCPY_3D:
    case GL_KIND_MEMCPY_3D_PEER:
      return family.base.find("Async") == std::string_view::npos;
    default:
      return false;
  }
}

namespace {

bool is_launch(gl_call_kind kind) {
  return kind == GL_KIND_LAUNCH || kind == GL_KIND_LAUNCH_EX || kind == GL_KIND_GRAPH ||
         kind == GL_KIND_LAUNCH_LEGACY || kind == GL_KIND_LAUNCH_MULTI;
}

// A call whose return probe would only say it succeeded: an asynchronous copy
// (a synchronous one ends the default stream's spans when it returns) or a
// memset. Counted at entry, as attempted, like a launch (GL_COOKIE_AT_ENTRY).
bool counted_at_entry(const EntryPointFamily& family) {
  switch (family.kind) {
    case GL_KIND_MEMCPY:
    case GL_KIND_MEMCPY_2D:
    case GL_KIND_MEMCPY_3D:
    case GL_KIND_MEMCPY_3D_PEER:
    case GL_KIND_MEMCPY_BATCH:
    case GL_KIND_MEMCPY_3D_BATCH:
      return !synchronous_copy(family);
    case GL_KIND_MEMSET:
      return true;
    default:
      return false;
  }
}

ProbeSpec spec_for(const EntryPointFamily& family, const ElfFunction& fn, CallNames& call_names,
                   const ProbePlanOptions& options) {
  auto form = parse_entry_point_form(fn.name, family.base);
  bool legacy = family.v1_is_32bit && form && form->version == 1;
  uint8_t size_arg = family.size_arg;
  for (const auto& [version, arg] : family.size_arg_by_version)
    if (form && form->version == version) size_arg = arg;
  ProbeSpec spec;
  spec.name = fn.name;
  spec.file_offset = fn.file_offset;
  spec.cookie =
      GL_MAKE_COOKIE(family.kind, call_names.id_of(fn.name), size_arg, cookie_direction_bits(family), legacy ? 1 : 0);
  if (synchronous_copy(family)) spec.cookie |= GL_COOKIE_SYNC_COPY_BIT;
  if (is_launch(family.kind) && !options.launch_returns) {
    spec.program = ProbeProgram::kLaunch;
    spec.with_return = false;
  } else if (counted_at_entry(family) && !options.launch_returns) {
    spec.program = ProbeProgram::kCallEntry;
    spec.cookie |= GL_COOKIE_AT_ENTRY_BIT;
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
  // Billing: the full plan less every address of the hot path, so no rare
  // name aliasing a launch or a wait (a tenant's own driver copy) puts a trap there.
  if (!options.hot_path) return plan_driver_by_set(functions, call_names, options).rare;
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
