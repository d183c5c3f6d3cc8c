#pragma once
// Which exported CUDA driver entry points change a bill, by what their names
// say they do: launches, graph launches, copies, memsets, allocations, frees,
// arrays, synchronisations, completion queries and the context calls that
// decide the device. A rule on the name, kept apart from the catalogue
// (cuda_entry_points.h) on purpose: checking a library's symbols against it
// finds the entry points the catalogue lacks, including forms a newer driver
// adds (docs/entry-points.md).
#include <string>
#include <string_view>
#include <vector>

#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"

namespace gpuledger::probes {

// The unversioned name: cuMemcpy2DAsync_v2_ptsz -> cuMemcpy2DAsync.
std::string entry_point_base(std::string_view name);

// Whether an entry point (its base name) changes a bill. Excluded on purpose:
// cuLaunchHostFunc (a host function), cuMemAllocHost and cuMemFreeHost
// (page-locked host memory).
bool changes_a_bill(std::string_view base);

// The exported names of `functions` that change a bill and that no probe of
// `plan` covers (a probe covers every alias at its address), sorted.
std::vector<std::string> unprobed_billable(const std::vector<ElfFunction>& functions,
                                           const std::vector<ProbeSpec>& plan);

}  // namespace gpuledger::probes
