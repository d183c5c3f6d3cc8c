#pragma once
// Rightsizing: what each workload (or pod) should hold, from the evidence the
// ledger kept per window (ledger/window_evidence.h), and what that would save
// at the prices it was billed at. docs/rightsizing.md is the contract; in short,
// per unit (a pod, or a workload with --by workload), the first that applies
// (rightsizing_decision.h decides; this builder gathers the evidence):
//
//   release     it held a GPU with no kernel launch for longer than
//               idle_after (default 24 h): the longest run of consecutive held
//               windows without launches (backfill and gap windows, when the
//               agent did not watch, break a run). Saving: what its fully idle
//               windows cost.
//   more        an over-user of a shared GPU (its used share of the activity
//               exceeds its allocated share by more than ledger::kShareFlagMargin),
//               or saturated: SM active p95 >= kSaturatedSmActive. Saving 0.
//   mig         on a GPU model with a MIG table (ledger/mig_profiles.h): the
//               smallest profile, smaller than what it holds, whose memory
//               fits the VRAM peak x (1 + vram_headroom) and whose compute n/7
//               covers the SM active p95 (of the whole GPU). Saving: what it
//               paid - its windows' cost x n / slices (a MIG instance's price).
//   time-slice  on a model without MIG: the smallest share 1/8, 1/4 or 1/2,
//               below what it holds, that covers its busy share. Saving: what
//               it paid - its windows' cost / k.
//   keep        otherwise.
// A decision that rests on a number the device did not measure is limited
// (limited, why), and states no saving: SM active from the eBPF span
// estimate (no device counters in its windows), a busy share from spans only,
// an unknown VRAM peak. A range's p95s count ratios in steps of 0.001,
// rounded up, and VRAM by the MB, rounded up (peaks exact), so a unit's memory
// does not grow with its windows. A saving is integer micro-units of the ledger's
// currency per month (kMonthSeconds: 730 h), scaled from the range's period
// (the part of [from, to) the stored windows cover), never a binary float.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/mig_profiles.h"
#include "ledger/store.h"

namespace gpuledger::report {

enum class GroupBy;

enum class Advice { kRelease, kMig, kTimeSlice, kMore, kKeep };
std::string_view to_string(Advice advice);  // release | mig | time-slice | more | keep

inline constexpr double kSaturatedSmActive = 0.95;
inline constexpr int64_t kMonthSeconds = 730 * 3600;  // a twelfth of 365 days, as cloud bills count a month

struct RightsizingOptions {
  int64_t idle_after_seconds = 24 * 3600;
  int64_t vram_headroom_micros = 200'000;  // the fraction in millionths (0.2): exact comparisons
  ledger::MigTables mig;
};

struct RightsizingEvidence {
  std::optional<uint64_t> vram_peak_bytes, vram_p95_bytes;  // the larger of the probes' and NVML's figures
  std::optional<double> sm_active_p95, sm_occupancy_p95;   // of the whole GPU
  std::string sm_source;           // "device" (counters) | "ebpf" (span estimate) | "" (neither)
  double busy_share = 0;           // busy GPU-seconds attributed / GPU-seconds held (or present)
  double idle_seconds_longest = 0;
  int64_t windows = 0;
  uint64_t launches = 0;
  std::vector<std::string> sources;  // of: probes, nvml, device, ebpf
  std::vector<std::string> models;   // the GPU models it ran on
  bool operator==(const RightsizingEvidence&) const = default;
};

struct Recommendation {
  std::string key;
  std::vector<std::string> members;  // the pods or workloads it stands for
  Advice advice = Advice::kKeep;
  std::string target;                           // "1g.10gb", "1/4"; empty otherwise
  std::optional<int64_t> saving_per_month_micros;  // nullopt when limited
  bool limited = false;
  std::string why;
  RightsizingEvidence evidence;
  int64_t cost_micros = 0;  // what it paid in the range
};

struct Rightsizing {
  int64_t from = 0, to = 0;
  std::string by = "pod";
  std::string currency = "USD";
  int64_t period_seconds = 0;  // of [from, to), covered by windows
  RightsizingOptions options;
  std::vector<Recommendation> rows;  // by saving (largest first; none last), then key
  // Where the idle runs came from (probe_set_note.h): "launches" (held
  // without launches), "nvml" (no SM time in NVML's per-process samples:
  // every window ran under the billing probe set), "mixed".
  std::string idle_source = "launches";
  bool launches_not_probed = false;  // idle_source "nvml": launch counts are not counts
};

// One window at a time (any order), like ReportBuilder. `by`: pod, workload,
// namespace or team; namespace and team rows gather their pods by
// recommendation and target (a row per kind of advice, savings summed).
class RightsizingBuilder {
 public:
  RightsizingBuilder(int64_t from, int64_t to, GroupBy by, RightsizingOptions options);
  ~RightsizingBuilder();
  RightsizingBuilder(const RightsizingBuilder&) = delete;
  RightsizingBuilder& operator=(const RightsizingBuilder&) = delete;
  void add(const ledger::WindowRecord& window);
  Rightsizing finish() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// --by for rightsizing: pod, workload, namespace or team; throws Error otherwise.
GroupBy parse_rightsizing_by(const std::string& text);
Rightsizing rightsize(const std::vector<ledger::WindowRecord>& windows, int64_t from, int64_t to, GroupBy by,
                      const RightsizingOptions& options = {});
Rightsizing rightsize(const ledger::Store& store, int64_t from, int64_t to, GroupBy by,
                      const RightsizingOptions& options = {});

}  // namespace gpuledger::report
