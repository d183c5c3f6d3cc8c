#pragma once
// Rolling old windows up to hours: a year of 60 s windows is ~500,000 window
// rows per GPU; a year of hours is 8,760. Store::roll_up_before() replaces the
// windows of one GPU slot that started in the same hour by merge_windows() of
// them, in one transaction.
//
// What is kept exactly: the cost, busy and idle micros (window and per
// account and kind), so every bill over whole hours is the same to the
// micro-unit; held GPU time per account (held_share is re-weighted to the
// merged length); busy seconds, GPU-busy seconds, VRAM byte-seconds and
// launches (sums). Averages (busy fraction, activity share, efficiency) are
// time-weighted, each over the windows that had a value. Rightsizing evidence
// (window_evidence.h): VRAM peaks exact (max), idle runs exact (joined in
// start order), and the p95s of the hour's window values (an hour of rolled-up
// windows then stands for its windows in a range's p95: an approximation, see
// docs/rightsizing.md). Device data quality (schema 9): the windows of each
// quality and of each finding summed; allocation against use: seconds summed
// (unknown where no window observed them). What is lost: the
// minute-by-minute detail, and a report range that starts or ends inside a
// rolled-up hour takes the hour by its start, like any window.
#include <vector>

#include "ledger/store.h"

namespace gpuledger::ledger {

inline constexpr int64_t kRollupSeconds = 3600;

// Windows of one slot with the same currency and GPU fraction, in start order.
// The merged window spans the first start to the last end; source and
// busy_source are kept when all agree, else "mixed"; an account's labels are
// the latest non-empty ones.
// Energy: the known windows' energy and parts add up exactly (windows with
// unknown energy add nothing); the source is the known windows' common one,
// else "mixed"; nullopt when no window had energy. The carbon intensity is
// the energy-weighted mean when every known window had one.
WindowRecord merge_windows(const std::vector<WindowRecord>& windows);
std::optional<WindowEnergyRecord> merge_energy(const std::vector<WindowRecord>& windows);

}  // namespace gpuledger::ledger
