#pragma once
// The window loop: turns what the agent sees (cumulative per-workload usage,
// the GPU inventory and allocation, device readings) into accounted windows in
// the store, and exports the ledger's counters on /metrics.
//
// Windows are [k*L, (k+1)*L) in Unix seconds, L = PriceBook::window_seconds.
// observe() is called every few seconds; a window is split (window_split.h)
// and written when the first observation at or after its end arrives.
//
// Activity of a workload in a window = its cumulative counters at the closing
// observation minus at the previous closing (or first) observation, so no
// count is lost or repeated; a workload total that goes backwards (the
// workload's map entries were recreated, the agent restarted) restarts from 0.
// Deltas are taken on the workload's totals, never on the per-slot parts: the
// agent may learn (or lose) the GPU of some of its counts between two
// observations, moving them between by_slot and the rest; the workload's delta
// is spread over those parts in proportion to their growth (decreases count as
// 0). A workload's activity goes to the slots it uses (WorkloadUsage::slots; if empty, the
// slots it holds; if none and the node has exactly one slot, that one; else
// it is not attributed and counted in unattributed_workloads()), divided
// evenly among them. VRAM byte-seconds integrate live bytes between
// observations, split exactly at window boundaries. Device busy fraction and
// efficiency are time-weighted averages of the readings in the window.
// Holders are those of the last observation in the window. When observations
// are further apart than a window (the agent stalled), the windows in between
// are written with source "gap": holders as last seen, the stalled interval's
// time-based readings (VRAM, device) spread over them, counter deltas in the
// first.
//
// Restart: the constructor reads the store's last window end E.
//  * Windows already stored are never written again (and the store ignores a
//    second write of the same (start, gpu) anyway).
//  * The agent was down for whole windows between E and the window of its
//    first observation: those windows are written with source "backfill",
//    the holders of that first observation, no activity (all idle) - up to
//    max_backfill_seconds (default 1 day); older gaps stay gaps (logged).
//  * The window the agent (re)starts in was only partly watched: it is
//    written once, at its end, with source "partial", the full cost C and the
//    activity seen after the start (observed_seconds says how much). Activity
//    that a crashed agent had seen in it before the crash was never written,
//    so it is neither lost twice nor counted twice.
//  * The counters the stored windows were charged up to (per account) are
//    stored with each window, in its transaction (Store::store_windows), with
//    the identity of the kernel counter set they were read from
//    (set_counter_set: the pinned map). When the agent adopted that same
//    counter set, the first observation after the restart is charged against
//    that baseline instead of being taken as one: the first window then holds
//    everything counted since the last stored window (calls made while the
//    agent was down, the tail a SIGKILL cut off), once. An account of the
//    baseline not seen again within a window of the restart was retired and
//    is forgotten. Another counter set (pins off, a replaced layout): the
//    counters restarted from 0, the baseline is not used (logged), and the
//    first observation is the baseline, as without one.
//  * A graceful stop (SIGTERM) stores the window in progress at once, as
//    "partial" with what was observed of it (store_window_in_progress()), so
//    the time watched is charged to the workloads seen, never as idle time
//    to __unallocated__. An agent restarted within that window finds it
//    stored: what it sees in the rest of it is counted in the next window.
//
// Retention: after writing a window, at most once an hour, windows that ended
// more than PriceBook::retention_days ago are deleted (0: never), and windows
// that started more than PriceBook::rollup_after_hours ago are merged into one
// per GPU and hour (hourly_rollup.h; 0: never).
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ledger/counter_deltas.h"
#include "ledger/device_quality.h"
#include "ledger/rate_remainder.h"
#include "ledger/energy_meter.h"
#include "ledger/ledger_metrics.h"
#include "ledger/observation.h"
#include "ledger/prices.h"
#include "ledger/process_sm_meter.h"
#include "ledger/series_retirement.h"
#include "ledger/share_seconds.h"
#include "ledger/store.h"
#include "ledger/vram_price.h"
#include "ledger/window_clock.h"
#include "ledger/window_split.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::ledger {

// Everything one slot did in one window (input of account_window()).
struct SlotWindow {
  GpuSlot slot;
  std::vector<HolderEntry> holders;
  std::map<std::string, Activity> activity;
  std::map<std::string, AccountLabels> labels;
  std::optional<double> device_busy_fraction;
  Efficiency device;
  std::optional<WindowEnergy> energy;  // nullopt: unknown
  std::optional<double> vram_capacity_bytes;  // the slot's memory, for the unheld memory cost
  // Rightsizing evidence (AccountEvidence): the peak of the live bytes the
  // probes saw each account hold on the slot, and of NVML's used memory.
  std::map<std::string, uint64_t> vram_peak_bytes, nvml_vram_peak_bytes;
  // false: some of the window ran under the billing probe set (Observation::hot_path_probed).
  bool launches_probed = true;
};

// Pure: prices, splits and fills the record for one slot and window.
// `cost_micros`: the window's cost as the slot's carry makes it (rate_remainder.h);
// unset: the window's own rounding (window_cost_micros).
WindowRecord account_window(const PriceBook& prices, int64_t start, int64_t end, const SlotWindow& in,
                            double observed_seconds, const std::string& source,
                            std::optional<int64_t> cost_micros = std::nullopt);

class Accountant : public metrics::MetricsContributor {
 public:
  Accountant(Store& store, PriceBook prices, int64_t max_backfill_seconds = 86400);
  void observe(const Observation& obs);
  // The per-account series of an account neither live, nor holding a GPU,
  // nor charged for this long leave /metrics (series_retirement.h; the agent's
  // --retire-after); their totals stay in the store. <= 0: never (default).
  void retire_series_after(double seconds);
  // Graceful stop: writes the window in progress now, with what was observed
  // of it up to the last observation (source "partial"). Call observe() with
  // a last observation first.
  void store_window_in_progress();
  // The identity of the kernel counter set the observations read (empty: not
  // one that outlives the agent). Call before the first observation.
  void set_counter_set(std::string id) { deltas_.set_counter_set(std::move(id)); }
  // The thresholds of the device data's cross-checks (device_quality.h).
  void set_device_checks(const DeviceCheckConfig& config) { cross_check_.set_config(config); }
  // Writes the metrics families (gpuledger_cost_total, ...). Thread-safe.
  void write_metrics(metrics::ExpositionWriter& out) const override;
  uint64_t windows_written() const;
  uint64_t unattributed_workloads() const { return deltas_.unattributed(); }
  const PriceBook& prices() const { return prices_; }

 private:
  struct SlotState {
    GpuSlot slot;
    std::map<std::string, Activity> activity;
    double busy_weighted = 0, busy_time = 0;
    std::map<std::string, std::pair<double, double>> eff;  // name -> (sum value*dt, sum dt)
    std::optional<double> vram_capacity;                   // the last reading
    std::map<std::string, uint64_t> vram_peak, nvml_peak;  // by account: the window's peaks
    double busy_dcgm_time = 0, busy_nvml_time = 0;        // whose utilisation busy_weighted holds
    // Allocation against use from the device side, seconds by account (accountant_checks.cpp).
    bool use_known = false;
    std::map<std::string, double> used_unallocated, allocated_unused;
    std::map<std::string, AccountLabels> use_labels;
  };
  // The stages of observe() (accountant.cpp), in the order it runs them.
  void first_observation(const Observation& obs, const HeldSlots& held);
  // The counter deltas since the last observation into the open window.
  void add_deltas(const Observation& obs, const HeldSlots& held);
  void remember(const Observation& obs, const HeldSlots& held);
  void close_window(int64_t start, double observed_seconds, const std::string& source);
  void attribute(const Observation& obs, double t0, double t1);
  void observe_energy(const Observation& obs);
  // The SM time NVML saw since the last call, into the open window's
  // activity; the first call is the baseline.
  void add_process_sm(const Observation& obs);
  ProcessSmMeter sm_meter_;
  // The device data's cross-checks (accountant_checks.cpp): the verdict on the
  // slot's window, with the suspect values dropped from `sw`.
  DeviceCrossCheck cross_check_;
  DeviceVerdict judge_device(const std::string& uuid, SlotWindow& sw, const SlotState* state);
  // Allocation against use over (t0, t1] of `obs`, into the open window.
  void attribute_use(const Observation& obs, double t0, double t1);
  // The window's seconds of use without allocation and allocation without
  // use, into its account records (adding those that only used the slot). A
  // holder the probes or NVML's samples saw work on the slot in the window
  // has no allocation without use in it (the device side missed it).
  void record_use(const SlotState* state, WindowRecord& rec);

  Store& store_;
  PriceBook prices_;
  LedgerMetrics metrics_;  // the /metrics families, fed from the windows written
  RateRemainders rate_remainders_;  // each slot's rounding carried into its next window
  WindowClock clock_;
  std::map<std::string, SlotState> slots_;
  CounterDeltas deltas_;
  std::map<std::pair<std::string, std::string>, uint64_t> nvml_used_;  // (account, slot): NVML used bytes now
  std::vector<HolderEntry> holders_;
  std::vector<GpuSlot> inventory_;
  bool allocation_known_ = true;
  std::map<std::string, AccountLabels> labels_;
  int64_t last_prune_ = 0;
  std::set<std::string> unpriced_logged_;  // slots already reported as priced at 0
  // vram_per_gib_hour caveats already logged: "model:<name>" (memory share
  // capped at 1), "slot:<uuid>" (memory size unknown: no memory part),
  // "backfill" (windows of time the agent was down: no memory reading).
  std::set<std::string> memory_price_logged_;
  void log_memory_share(const GpuSlot& slot, const MemoryShare& share, std::optional<double> capacity_bytes,
                        const std::string& source);
  // Stores the spans of the windows just written whose slot's memory size was
  // unknown (Store::note_memory_size_unknown), for the reports' notes.
  void note_memory_size_unknown(const std::vector<WindowRecord>& records, const std::vector<bool>& inserted,
                                const std::vector<bool>& unknown);

  EnergyMeter energy_meter_;
  bool hot_path_unprobed_ = false;  // the open window saw the billing probe set (Observation::hot_path_probed)
};

}  // namespace gpuledger::ledger
