#include "node/snapshot_usage.h"

namespace gpuledger::node {

namespace {
// Kernel launches and graph launches: a graph launch is work too (the last
// resort of the busy split, window_split.h, counts both).
uint64_t launches_of(const probes::Usage& u) { return u.counters.launches + u.counters.graph_launches; }

template <typename View>
void add_per_gpu(const View& view, ledger::WorkloadUsage& out) {
  if constexpr (requires { view.by_gpu; }) {
    for (const auto& g : view.by_gpu) {
      if (g.uuid.empty()) continue;  // device not known for sure: goes with the rest
      auto& s = out.by_slot[g.uuid];
      s.busy_seconds += probes::busy_seconds_estimate(g.usage);
      s.launches += launches_of(g.usage);
      s.live_bytes += g.usage.live_bytes();
    }
  }
}
}  // namespace

ledger::AccountLabels account_labels(const identity::WorkloadNames& names) {
  return {names.namespace_name, names.pod, names.container, names.team, names.slurm_user, names.slurm_account};
}

std::vector<ledger::WorkloadUsage> workload_usages(const attribution::AttributionSnapshot& snapshot) {
  std::vector<ledger::WorkloadUsage> out;
  out.reserve(snapshot.workloads.size());
  for (const auto& view : snapshot.workloads) {
    // GPU infrastructure (the MPS server) is nobody's use of the GPU: not a
    // user in the split, not __unallocated__ activity.
    if (view.infrastructure) continue;
    ledger::WorkloadUsage w;
    w.account = view.workload.id;
    w.labels = account_labels(view.names);
    w.busy_seconds = probes::busy_seconds_estimate(view.usage);
    w.launches = launches_of(view.usage);
    w.live_bytes = view.usage.live_bytes();
    add_per_gpu(view, w);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace gpuledger::node
