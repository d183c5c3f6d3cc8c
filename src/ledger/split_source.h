#pragma once
// Which evidence of GPU time split the busy part of a shared window among its
// users (window_split.h, docs/ledger.md "What splits a shared GPU's window"),
// best first. Stored with each window (split_source, schema 7), exported as the
// split_source label of gpuledger_ledger_split_windows_total and shown in the
// reports.
#include <map>
#include <string>
#include <string_view>

namespace gpuledger::ledger {

enum class SplitSource {
  kNvml,      // NVML per-process SM utilisation samples, integrated over the window
  kSpans,     // eBPF busy spans (launch to completion, per stream and context)
  kLaunches,  // launches counted by the probes
  kVram,      // VRAM byte-seconds held (nobody launched anything)
  // NVML's samples were mostly of processes no workload could be named for
  // (over kUnattributedFallbackShare of them): the spans, else the launches split.
  kSpansUnattributed,
  kLaunchesUnattributed,
  kNone,      // no user: nothing to split by
};
// "nvml", "spans", "launches", "vram", "spans-unattributed",
// "launches-unattributed", "none".
std::string_view to_string(SplitSource source);
// Every value to_string gives, best first.
inline constexpr std::string_view kSplitSourceNames[] = {"nvml", "spans", "launches", "vram", "spans-unattributed",
                                                      "launches-unattributed", "none"};

// Above this part of a window's NVML SM time being __unattributed__
// (window_split.h), NVML's per-process samples no longer split the window.
inline constexpr double kUnattributedFallbackShare = 0.25;

// Above this many points (percentage points of a user's share of the window's
// activity) the span shares are said to disagree with NVML's.
inline constexpr double kSplitDisagreementPoints = 10.0;

// The largest gap, in points, between two share maps over the union of their
// keys (a key absent from one has share 0 there).
double largest_share_gap_points(const std::map<std::string, double>& a, const std::map<std::string, double>& b);

}  // namespace gpuledger::ledger
