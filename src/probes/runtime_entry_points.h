#pragma once
// The CUDA runtime (libcudart) entry points gpuledger probes with
// --runtime-probes, as data, and their probes for one file: a shared
// libcudart, or an executable that links the runtime statically (nvcc's
// default) and kept its symbols. How the two levels count a call once:
// bpf/cuda_runtime.bpf.h and docs/runtime-probes.md.
#include <optional>
#include <string_view>
#include <vector>

#include "cuda_probes.h"
#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"

namespace gpuledger::probes {

enum class RuntimeProbes { kOff, kAuto, kOn };

// "off", "auto", "on"; nullopt for anything else.
std::optional<RuntimeProbes> parse_runtime_probes(std::string_view text);
gl_runtime_mode to_bpf_mode(RuntimeProbes mode);

// Every runtime family gpuledger knows, in a fixed order. Forms are matched
// like the driver's (cudaLaunchKernel, cudaLaunchKernel_ptsz, cudaMemcpy_ptds).
const std::vector<EntryPointFamily>& runtime_entry_point_families();

// One probe (entry and return) per distinct address among `functions`, which
// may mix a file's dynamic and static symbols. Empty: no runtime in the file.
// `call_names` should number from GL_RUNTIME_CALL_BASE. Without `hot_path`
// (the billing probe set, probe_sets.h): the rare calls only.
std::vector<ProbeSpec> plan_runtime_probes(const std::vector<ElfFunction>& functions, CallNames& call_names,
                                           bool hot_path = true);

}  // namespace gpuledger::probes
