#pragma once
// Rightsizing: what each workload (or pod) should hold, from the evidence the
// ledger kept per window (ledger/window_evidence.h), and what that would save
// at the prices it was billed at. docs/rightsizing.md is the contract: the
// advice (release, more, mig, time-slice, keep), when a row is limited and
// states no saving, its confidence, and the memory-bound case. This builder
// gathers the evidence; rightsizing_decision.h decides. Savings are integer
// micro-units per month (kMonthSeconds: 730 h), never a binary float.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/mig_profiles.h"
#include "ledger/share_seconds.h"
#include "ledger/store.h"

namespace gpuledger::report {

enum class GroupBy;

enum class Advice { kRelease, kMig, kTimeSlice, kMore, kKeep };
std::string_view to_string(Advice advice);  // release | mig | time-slice | more | keep

inline constexpr double kSaturatedSmActive = 0.95;
inline constexpr int64_t kMonthSeconds = 730 * 3600;  // a twelfth of 365 days, as cloud bills count a month
inline constexpr double kMemoryBoundDram = 0.30;      // DRAM active p95 from which a light-compute unit is memory-bound

struct RightsizingOptions {
  int64_t idle_after_seconds = 24 * 3600;
  int64_t vram_headroom_micros = 200'000;  // the fraction in millionths (0.2): exact comparisons
  int64_t min_evidence_seconds = 24 * 3600;  // rightsizing.min_evidence: less held time behind a row states no saving
  ledger::MigTables mig;
};

// A row's confidence in hundredths (0..100): the held time behind it weighted
// w(d) = 0.3 d for d < 1 day, 0.3 + 0.7 (d - 1) / 6 up to 7 days, 1 after;
// times its steadiness (thousandths, 0..1000), rounded half up. Integer
// arithmetic over whole seconds: the same figures give the same confidence.
int64_t confidence_hundredths(int64_t evidence_seconds, int64_t steadiness_thousandths);

struct RightsizingEvidence {
  std::optional<uint64_t> vram_peak_bytes, vram_p95_bytes;  // the larger of the probes' and NVML's figures
  std::optional<double> sm_active_p95, sm_occupancy_p95;   // of the whole GPU
  std::optional<double> dram_active_p95, tensor_active_p95;  // of the whole GPU, the device counters only
  std::string sm_source;           // "device" (counters) | "ebpf" (span estimate) | "" (neither)
  double busy_share = 0;           // busy GPU-seconds attributed / GPU-seconds held (or present)
  double idle_seconds_longest = 0;
  int64_t windows = 0;
  uint64_t launches = 0;
  // Held GPU-seconds in the windows the agent watched (present, for a unit that held nothing).
  double evidence_seconds = 0;
  // 1000 - (p95 - p50) of the figure that sized it, in thousandths: DRAM active
  // when memory-bound, else SM active (device or eBPF estimate); 1000 without one.
  int64_t steadiness_thousandths = 1000;
  std::vector<std::string> sources;  // of: probes, nvml, device, ebpf
  std::vector<std::string> models;   // the GPU models it ran on
  // Its watched windows whose device data was suspect (ledger/device_quality.h):
  // their suspect values are not evidence; the why says so. "field:reason" -> windows.
  int64_t device_suspect_windows = 0;
  std::map<std::string, int64_t> device_findings;
  bool operator==(const RightsizingEvidence&) const = default;
};

struct Recommendation {
  std::string key;
  std::vector<std::string> members;  // the pods or workloads it stands for
  Advice advice = Advice::kKeep;
  std::string target;                           // "1g.10gb", "1/4"; empty otherwise
  std::optional<int64_t> saving_per_month_micros;  // nullopt when limited
  int64_t confidence_hundredths = 0;               // 0..100 (a group: its least confident pod's)
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
  // The same, given the window's ledger::share_seconds (a report's builder
  // has them already: made twice, they were 8 % of a fleet report's client).
  void add(const ledger::WindowRecord& window, const ledger::WindowShares& shares);
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
