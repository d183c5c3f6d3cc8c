#pragma once
// Probe sets (`--probe-set`, `probes: {set: ...}` in --config): which CUDA
// entry points get a uprobe. `full` probes every family gpuledger knows;
// `billing` leaves out every entry point called per unit of work (launches of
// every form, copies, memsets, synchronisations, completion queries, event
// records), so a tenant's hot path pays no trap; `auto` picks between the two
// by what the node's GPUs can split themselves (docs/probe-sets.md).
//
// The one place that says which call kinds are on the hot path is the table in
// probe_sets.cpp: plan_probes and plan_runtime_probes both filter by it.
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "common/not_probed.h"
#include "cuda_probes.h"
#include "probes/cuda_entry_points.h"

namespace gpuledger::probes {

enum class ProbeSet { kAuto, kBilling, kFull };

// What the API, reports and rightsize say where a count only the hot path
// feeds would be, under the billing set: such counts are absent, never 0.
using gpuledger::kNotProbedByBilling;

// "auto", "billing", "full"; nullopt for anything else.
std::optional<ProbeSet> parse_probe_set(std::string_view text);
std::string_view probe_set_name(ProbeSet set);

// How often a program calls an entry point of a kind: per unit of work (each
// launch, copy or wait), or rarely (set-up, contexts, allocations, frees).
enum class CallRate { kPerUnitOfWork, kRare };

// The rate of a call kind; nullopt for a kind the table does not list (a new
// kind must be classified before it can be planned: see the tests).
std::optional<CallRate> call_rate(gl_call_kind kind);

// Whether the `billing` set probes a family: its kind is listed and rare.
bool in_billing_set(const EntryPointFamily& family);

// The addresses of every form of every family among `families` the billing
// set leaves out: an alias of one is on the hot path whatever its name.
std::set<uint64_t> hot_path_offsets(const std::vector<ElfFunction>& functions,
                                    const std::vector<EntryPointFamily>& families);

// A file's full plan cut in two: the probes every set keeps, and the hot
// path's, which only `full` attaches. A switch of set attaches or detaches the
// hot part and leaves the rare part's probes (and counts) in place.
struct PlanBySet {
  std::vector<ProbeSpec> rare, hot;
};
PlanBySet split_by_call_rate(std::vector<ProbeSpec> full_plan, const std::set<uint64_t>& hot_offsets);
// A driver's and a runtime's full plan (plan_probes, plan_runtime_probes),
// cut so. The billing set's plan is their `rare` part, wherever it is asked for.
PlanBySet plan_driver_by_set(const std::vector<ElfFunction>& functions, CallNames& call_names,
                             const ProbePlanOptions& options);
PlanBySet plan_runtime_by_set(const std::vector<ElfFunction>& functions, CallNames& call_names);

}  // namespace gpuledger::probes
