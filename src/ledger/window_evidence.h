#pragma once
// The rightsizing evidence of an account record (AccountEvidence, store.h):
// what a single window's record leaves unset is derived here from its own
// columns, so every reader sees the same values; and the merge that an hourly
// roll-up keeps (peaks exact, p95s of the windows' values, idle runs exact).
//
// Per record and window of `seconds`:
//   vram peak / p95      the probes' live bytes (AccountEvidence), unknown when not watched
//   nvml peak / p95      NVML's per-process used memory, unknown when NVML had none
//   sm_active_p95        the device counter (efficiency.sm_active: the device's
//                        value on an exclusive GPU, apportioned by activity share
//                        on a shared one); unknown without device counters
//   busy_p95             the eBPF span estimate, busy_seconds / window, at most 1
//   idle                 held (held_share > 0) with no launches: the whole window
//   windows              1
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ledger/store.h"

namespace gpuledger::ledger {

std::optional<uint64_t> vram_peak(const AccountRecord& a);
std::optional<uint64_t> vram_p95(const AccountRecord& a);
std::optional<uint64_t> nvml_vram_peak(const AccountRecord& a);
std::optional<uint64_t> nvml_vram_p95(const AccountRecord& a);
std::optional<double> sm_active_p95(const AccountRecord& a);
std::optional<double> sm_occupancy_p95(const AccountRecord& a);
double busy_p95(const AccountRecord& a, double seconds);
IdleRun idle_run(const AccountRecord& a, double seconds);
int64_t window_count(const AccountRecord& a);

// Idle runs of consecutive spans (x then y, `x_seconds` and `y_seconds` long)
// joined: a run that fills x continues into y's lead.
IdleRun join_idle(const IdleRun& x, double x_seconds, const IdleRun& y, double y_seconds);

// The 95th percentile of values each standing for `weight` windows (nearest
// rank: the smallest value whose cumulative weight reaches 95 % of the total);
// nullopt when there are none. Exact over single windows; over rolled-up
// hours (each its own p95, weighted by its windows) an approximation.
std::optional<double> weighted_p95(std::vector<std::pair<double, int64_t>> values);

// One account's evidence over records of consecutive windows, in start order:
// (record or nullptr where it was absent, window start, window end). Peaks are
// the maximum, p95s the weighted_p95 of the records' p95s, idle runs joined
// (an absent window or a gap between windows breaks a run), windows summed.
struct EvidenceSpan {
  const AccountRecord* record = nullptr;
  int64_t start = 0, end = 0;
};
AccountEvidence merge_evidence(const std::vector<EvidenceSpan>& spans);

}  // namespace gpuledger::ledger
