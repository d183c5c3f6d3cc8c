#include "probes/runtime_entry_points.h"

#include <set>

#include "probes/probe_sets.h"

namespace gpuledger::probes {

std::optional<RuntimeProbes> parse_runtime_probes(std::string_view text) {
  if (text == "off") return RuntimeProbes::kOff;
  if (text == "auto") return RuntimeProbes::kAuto;
  if (text == "on") return RuntimeProbes::kOn;
  return std::nullopt;
}

gl_runtime_mode to_bpf_mode(RuntimeProbes mode) {
  switch (mode) {
    case RuntimeProbes::kAuto:
      return GL_RUNTIME_AUTO;
    case RuntimeProbes::kOn:
      return GL_RUNTIME_ON;
    default:
      return GL_RUNTIME_OFF;
  }
}

const std::vector<EntryPointFamily>& runtime_entry_point_families() {
  static const std::vector<EntryPointFamily> families = {
      // cudaLaunchKernel(func, dim3 grid, dim3 block, args, sharedMem, stream).
      {"cudaLaunchKernel", GL_KIND_RT_LAUNCH},
      {"cudaLaunchCooperativeKernel", GL_KIND_RT_LAUNCH},
      // cudaLaunchKernelExC(const cudaLaunchConfig_t *config, ...): the
      // config starts with gridDim and blockDim, like CUlaunchConfig.
      {"cudaLaunchKernelExC", GL_KIND_LAUNCH_EX},
      {"cudaGraphLaunch", GL_KIND_GRAPH},
      // (void **devPtr, size_t size, ...).
      {"cudaMalloc", GL_KIND_ALLOC},
      {"cudaMallocManaged", GL_KIND_ALLOC},
      {"cudaMallocAsync", GL_KIND_ALLOC},
      {"cudaMallocFromPoolAsync", GL_KIND_ALLOC},
      {"cudaMallocPitch", GL_KIND_ALLOC_PITCH},  // (devPtr, size_t *pitch, width, height)
      {"cudaFree", GL_KIND_FREE},
      {"cudaFreeAsync", GL_KIND_FREE},
      // (dst, src, count, enum cudaMemcpyKind kind[, stream]): the kind names the direction.
      {"cudaMemcpy", GL_KIND_RT_MEMCPY},
      {"cudaMemcpyAsync", GL_KIND_RT_MEMCPY},
      // (dst, dstDevice, src, srcDevice, count[, stream]).
      {"cudaMemcpyPeer", GL_KIND_MEMCPY, 4, GL_DIR_PEER},
      {"cudaMemcpyPeerAsync", GL_KIND_MEMCPY, 4, GL_DIR_PEER},
      {"cudaStreamSynchronize", GL_KIND_SYNC},
      {"cudaDeviceSynchronize", GL_KIND_SYNC, 0, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 0, GL_SYNC_CONTEXT},
      {"cudaEventSynchronize", GL_KIND_SYNC, 0, GL_DIR_UNKNOWN, false, GL_CTX_SET, {}, 0, GL_SYNC_EVENT},
      // The thread's runtime device, for calls whose driver context calls went unseen.
      {"cudaSetDevice", GL_KIND_RT_SET_DEVICE},
  };
  return families;
}

std::vector<ProbeSpec> plan_runtime_probes(const std::vector<ElfFunction>& functions, CallNames& call_names,
                                           bool hot_path) {
  if (!hot_path) return plan_runtime_by_set(functions, call_names).rare;  // as plan_probes does
  std::vector<ProbeSpec> specs;
  std::set<uint64_t> offsets_taken;  // aliases, and a symbol in both .dynsym and .symtab: one probe
  for (const auto& family : runtime_entry_point_families()) {
    for (const auto& fn : find_entry_point_forms(functions, family.base)) {
      if (!offsets_taken.insert(fn.file_offset).second) continue;
      ProbeSpec spec;
      spec.name = fn.name;
      spec.file_offset = fn.file_offset;
      spec.program = ProbeProgram::kRuntime;
      spec.with_return = true;
      spec.cookie = GL_MAKE_COOKIE(family.kind, call_names.id_of(fn.name), family.size_arg,
                                   cookie_direction_bits(family), 0);
      if (synchronous_copy(family)) spec.cookie |= GL_COOKIE_SYNC_COPY_BIT;
      specs.push_back(spec);
    }
  }
  return specs;
}

}  // namespace gpuledger::probes
