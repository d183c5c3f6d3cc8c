#include "probes/probe_sets.h"

#include <array>
#include <utility>

#include "probes/runtime_entry_points.h"

namespace gpuledger::probes {
namespace {

// Every call kind of cuda_probes.h, by how often a program calls it. Hot:
// what a launch-bound tenant calls once or more per kernel. Rare: what a
// program calls at start, per context, per allocation or at exit - the calls
// the bill of an exclusive or time-sliced GPU needs (who holds the GPU, on
// which device, how much memory) when NVML splits the SM time itself.
constexpr std::array<std::pair<gl_call_kind, CallRate>, 26> kCallRates = {{
    {GL_KIND_LAUNCH, CallRate::kPerUnitOfWork},
    {GL_KIND_LAUNCH_EX, CallRate::kPerUnitOfWork},
    {GL_KIND_GRAPH, CallRate::kPerUnitOfWork},
    {GL_KIND_LAUNCH_LEGACY, CallRate::kPerUnitOfWork},
    // Set before each legacy launch, and only read by one.
    {GL_KIND_BLOCK_SHAPE, CallRate::kPerUnitOfWork},
    {GL_KIND_LAUNCH_MULTI, CallRate::kPerUnitOfWork},
    {GL_KIND_RT_LAUNCH, CallRate::kPerUnitOfWork},
    {GL_KIND_MEMCPY, CallRate::kPerUnitOfWork},
    {GL_KIND_RT_MEMCPY, CallRate::kPerUnitOfWork},
    {GL_KIND_MEMCPY_2D, CallRate::kPerUnitOfWork},
    {GL_KIND_MEMCPY_3D, CallRate::kPerUnitOfWork},
    {GL_KIND_MEMCPY_3D_PEER, CallRate::kPerUnitOfWork},
    {GL_KIND_MEMCPY_BATCH, CallRate::kPerUnitOfWork},
    {GL_KIND_MEMCPY_3D_BATCH, CallRate::kPerUnitOfWork},
    {GL_KIND_MEMSET, CallRate::kPerUnitOfWork},
    {GL_KIND_SYNC, CallRate::kPerUnitOfWork},
    {GL_KIND_QUERY, CallRate::kPerUnitOfWork},
    // Only tells a later wait what it waits for.
    {GL_KIND_EVENT_RECORD, CallRate::kPerUnitOfWork},
    {GL_KIND_OTHER, CallRate::kRare},  // cuInit: registers the process
    {GL_KIND_CONTEXT, CallRate::kRare},  // the device of every later call, allocations included
    {GL_KIND_RT_SET_DEVICE, CallRate::kRare},
    // Allocations and frees, the virtual-memory (cuMemCreate, cuMemRelease)
    // and pool (cuMemAllocAsync, cuMemFreeAsync) forms too: VRAM is billed.
    {GL_KIND_ALLOC, CallRate::kRare},
    {GL_KIND_ALLOC_PITCH, CallRate::kRare},
    {GL_KIND_ARRAY_CREATE, CallRate::kRare},
    {GL_KIND_FREE, CallRate::kRare},
    {GL_KIND_EXPORT_TABLE, CallRate::kRare},
}};

}  // namespace

std::optional<ProbeSet> parse_probe_set(std::string_view text) {
  if (text == "auto") return ProbeSet::kAuto;
  if (text == "billing") return ProbeSet::kBilling;
  if (text == "full") return ProbeSet::kFull;
  return std::nullopt;
}

std::string_view probe_set_name(ProbeSet set) {
  switch (set) {
    case ProbeSet::kAuto: return "auto";
    case ProbeSet::kBilling: return "billing";
    case ProbeSet::kFull: return "full";
  }
  return "full";
}

std::optional<CallRate> call_rate(gl_call_kind kind) {
  for (const auto& [k, rate] : kCallRates)
    if (k == kind) return rate;
  return std::nullopt;
}

bool in_billing_set(const EntryPointFamily& family) { return call_rate(family.kind) == CallRate::kRare; }

std::set<uint64_t> hot_path_offsets(const std::vector<ElfFunction>& functions,
                                    const std::vector<EntryPointFamily>& families) {
  std::set<uint64_t> offsets;
  for (const auto& family : families)
    if (!in_billing_set(family))
      for (const auto& fn : find_entry_point_forms(functions, family.base)) offsets.insert(fn.file_offset);
  return offsets;
}

PlanBySet split_by_call_rate(std::vector<ProbeSpec> full_plan, const std::set<uint64_t>& hot_offsets) {
  PlanBySet out;
  for (auto& spec : full_plan) (hot_offsets.contains(spec.file_offset) ? out.hot : out.rare).push_back(std::move(spec));
  return out;
}

PlanBySet plan_driver_by_set(const std::vector<ElfFunction>& functions, CallNames& call_names,
                             const ProbePlanOptions& options) {
  ProbePlanOptions full = options;
  full.hot_path = true;
  return split_by_call_rate(plan_probes(functions, call_names, full), hot_path_offsets(functions, entry_point_families()));
}

PlanBySet plan_runtime_by_set(const std::vector<ElfFunction>& functions, CallNames& call_names) {
  return split_by_call_rate(plan_runtime_probes(functions, call_names),
                            hot_path_offsets(functions, runtime_entry_point_families()));
}

}  // namespace gpuledger::probes
