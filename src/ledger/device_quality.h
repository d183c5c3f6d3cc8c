#pragma once
// Cross-checks of a GPU's device data per window (issue 33): DCGM's profiling
// fields (GR engine, SM active, SM occupancy, tensor, DRAM), DCGM's and NVML's
// utilisation, NVML's per-process SM samples and the probes' busy spans are
// held against each other. A window whose device data fails a check is
// `suspect`: its findings name the field and the reason, and the suspect
// values are not used (the accountant drops them: efficiency unknown, never
// 0 %; a suspect utilisation does not split the busy part).
//
// The rules (thresholds: DeviceCheckConfig, the `device_checks:` section):
//  * zero_while_busy  GR engine active or SM active reads 0 (every sample of
//                     the window <= zero_epsilon) while utilisation (the
//                     window's mean, DCGM's or NVML's, the larger) is at
//                     least busy_utilization AND the probes' busy spans (or,
//                     without spans, NVML's per-process SM samples) cover at
//                     least busy_spans of the window. SM occupancy, tensor
//                     and DRAM reading 0 are suspect only alongside (a busy
//                     GPU may run no tensor instruction, or one warp per SM).
//                     A utilisation that reads 0 while the other source's is
//                     busy and the spans agree is suspect the same way.
//  * frozen           a field unchanged (within 1e-9) for frozen_seconds
//                     while another checked field moved by at least
//                     moving_range in that time. 0 and 1 (and values within
//                     zero_epsilon of them) are exempt: an idle counter and a
//                     saturated one stand still legitimately.
//  * stopped          every value a source reports for the GPU (dcgm: all its
//                     fields, the energy counter and power included; nvml
//                     likewise) unchanged for stopped_seconds while the
//                     other source's checked fields moved by moving_range.
//                     Field: the source ("dcgm", "nvml"); all its values are
//                     suspect.
//
// quality: absent when the window had no device sample at all, suspect with
// any finding, else ok. Healthy noise never trips these: a live counter is
// never bit-identical for minutes (the energy counter always grows), and the
// zero rule needs a flat 0 against two independent witnesses of work.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::ledger {

enum class CheckedField : size_t {
  kGrEngineActive,
  kSmActive,
  kSmOccupancy,
  kTensorActive,
  kDramActive,
  kDcgmUtilization,
  kNvmlUtilization,
  kCount,
};
inline constexpr size_t kCheckedFieldCount = static_cast<size_t>(CheckedField::kCount);
// gr_engine_active, sm_active, sm_occupancy, tensor_active, dram_active,
// dcgm_utilization, nvml_utilization
std::string_view field_name(CheckedField f);

// One device sample of one GPU, per source (ratios 0..1; nullopt: not read).
struct CheckSample {
  std::array<std::optional<double>, kCheckedFieldCount> values{};
  // Every value each source reported for the GPU (any order, fixed per
  // source); empty: the source said nothing.
  std::vector<double> dcgm_all, nvml_all;
  std::optional<double>& operator[](CheckedField f) { return values[static_cast<size_t>(f)]; }
  const std::optional<double>& operator[](CheckedField f) const { return values[static_cast<size_t>(f)]; }
  bool empty() const;
};

struct DeviceCheckConfig {
  double busy_utilization = 0.5;  // utilisation at or above this says busy
  double busy_spans = 0.25;       // span (or NVML sample) coverage of the window at or above this says busy
  double zero_epsilon = 0.001;    // a ratio at or below this reads 0
  double frozen_seconds = 900;
  double stopped_seconds = 600;
  double moving_range = 0.2;      // "the others move": max - min of another field
  bool operator==(const DeviceCheckConfig&) const = default;
};

enum class DeviceQuality { kOk, kSuspect, kAbsent };
std::string_view to_string(DeviceQuality q);  // ok, suspect, absent

inline constexpr std::string_view kZeroWhileBusy = "zero_while_busy";
inline constexpr std::string_view kFrozen = "frozen";
inline constexpr std::string_view kStopped = "stopped";

struct DeviceFinding {
  std::string field;   // field_name(), or the source (dcgm, nvml) for stopped
  std::string reason;  // zero_while_busy | frozen | stopped
  auto operator<=>(const DeviceFinding&) const = default;
};

struct DeviceVerdict {
  DeviceQuality quality = DeviceQuality::kAbsent;
  std::vector<DeviceFinding> findings;  // sorted, unique
  // Whether the value of `f` is not to be used: its own finding, or its
  // source stopped (profiling fields and dcgm_utilization: dcgm).
  bool suspect(CheckedField f) const;
};

// What the window's other witnesses saw: the probes' busy seconds (summed
// over the slot's accounts, nullopt: not probed) and NVML's per-process SM
// seconds (0: none sampled).
struct WindowWitness {
  double window_seconds = 0;
  std::optional<double> span_busy_seconds;
  double nvml_sm_seconds = 0;
};

// Per GPU: the window's samples and the runs of unchanged values across
// windows (frozen, stopped need minutes, longer than a window).
class DeviceCrossCheck {
 public:
  explicit DeviceCrossCheck(DeviceCheckConfig config = {}) : config_(config) {}
  void set_config(const DeviceCheckConfig& c) { config_ = c; }
  const DeviceCheckConfig& config() const { return config_; }
  // A sample of `uuid` standing for (t0, t1].
  void observe(const std::string& uuid, double t0, double t1, const CheckSample& s);
  // The verdict on the window of `uuid` just ended; its window sums restart
  // (the runs go on).
  DeviceVerdict close(const std::string& uuid, const WindowWitness& witness);
  // Forgets a GPU that is gone.
  void forget(const std::string& uuid) { gpus_.erase(uuid); }

 private:
  struct Run {
    std::optional<double> value;
    double since = 0, last = 0;
    std::array<double, kCheckedFieldCount> lo{}, hi{};  // the other fields' range since `since`
    std::array<bool, kCheckedFieldCount> seen{};
  };
  struct SourceRun {
    std::vector<double> values;
    bool live = false;
    double since = 0, last = 0;
    std::array<double, kCheckedFieldCount> lo{}, hi{};
    std::array<bool, kCheckedFieldCount> seen{};
  };
  struct Gpu {
    std::array<double, kCheckedFieldCount> weighted{}, seconds{}, max{};
    std::array<bool, kCheckedFieldCount> any{};
    bool sampled = false;
    std::array<Run, kCheckedFieldCount> runs;
    SourceRun dcgm, nvml;
  };
  DeviceCheckConfig config_;
  std::map<std::string, Gpu> gpus_;
};

// The window's findings as stored (store.h, device_findings): "field:reason=N"
// joined by ",", N the windows (1 for one window; sums in a roll-up), sorted.
std::string encode_findings(const std::map<std::string, int64_t>& findings);
std::map<std::string, int64_t> decode_findings(std::string_view text);
// "field:reason" keys of a verdict.
std::map<std::string, int64_t> finding_counts(const DeviceVerdict& v);
// "sm_active: zero_while_busy, dcgm: stopped" - the reason shown where a value is suspect.
std::string describe_findings(const std::map<std::string, int64_t>& findings);

}  // namespace gpuledger::ledger

namespace gpuledger::ledger {
class Store;
// For `gpuledger doctor --store`: the device data of the windows that started
// in [from, to): ok (empty reason when no window was suspect; "no window"
// when none was judged), or one line naming each suspect GPU's windows and
// findings.
struct DeviceQualitySummary {
  int64_t windows = 0, ok = 0, suspect = 0, absent = 0;
  std::map<std::string, std::map<std::string, int64_t>> findings_by_gpu;  // uuid -> "field:reason" -> windows
  std::string line() const;
};
DeviceQualitySummary device_quality_summary(const Store& store, int64_t from, int64_t to);
}  // namespace gpuledger::ledger
