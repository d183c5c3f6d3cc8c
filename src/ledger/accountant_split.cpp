// The accountant's part in splitting a shared window by the best evidence
// (window_split.h, split_source.h): NVML's per-process SM time into the open
// window, and the /metrics families that say what split each window.
#include "ledger/accountant.h"

namespace gpuledger::ledger {

void Accountant::add_process_sm(const Observation& obs) {
  for (const auto& [key, seconds] : sm_meter_.take(obs.process_sm))
    slots_[key.first].activity[key.second].nvml_sm_seconds += seconds;
  std::lock_guard lock(mu_);
  unattributed_sm_ = sm_meter_.unattributed_seconds();
}

void Accountant::count_split_locked(const WindowRecord& w) {
  ++split_windows_[{w.slot.uuid, w.split_source.empty() ? "unknown" : w.split_source}];
  if (w.split_disagreement) ++split_disagreements_[w.slot.uuid];
}

void Accountant::write_split_metrics(metrics::ExpositionWriter& out) const {
  out.family("gpuledger_ledger_split_windows_total", metrics::MetricType::kCounter,
             "Accounting windows in the ledger by GPU and the evidence that split their busy part among the users "
             "(split_source: nvml per-process SM samples, spans, launches, vram, none; spans-unattributed and "
             "launches-unattributed: NVML's samples were mostly of processes of no known workload; unknown: written "
             "before gpuledger recorded it)");
  for (const auto& [key, n] : split_windows_) out.sample({{"UUID", key.first}, {"split_source", key.second}}, n);
  out.family("gpuledger_ledger_split_disagreements_total", metrics::MetricType::kCounter,
             "Windows written since the agent started where NVML's per-process SM time split the busy part and the "
             "eBPF span shares differed from it by more than 10 points for some user (NVML's split was used)");
  for (const auto& [uuid, n] : split_disagreements_) out.sample({{"UUID", uuid}}, n);
  out.family("gpuledger_nvml_unattributed_sm_seconds_total", metrics::MetricType::kCounter,
             "SM-seconds NVML's per-process samples gave processes no workload could be named for, since the agent "
             "started; billed to __unattributed__, never to the named users");
  for (const auto& [uuid, u] : unattributed_sm_) out.sample({{"gpu", u.gpu}, {"UUID", uuid}}, u.seconds);
}

}  // namespace gpuledger::ledger
