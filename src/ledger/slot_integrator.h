#pragma once
// The slot integrator: what each slot did in the open window, integrated
// between observations. Device busy fraction and efficiency are time-weighted
// averages of the readings; VRAM byte-seconds integrate each account's live
// bytes over (t0, t1], and the caller cuts that interval at the window's end,
// so they split exactly at window boundaries; peaks of the live and NVML-used
// bytes; allocation against use from the device side, in seconds; the counter
// deltas, NVML's per-process SM time and energy that the window gets. It
// yields each slot's window (window()) and starts the next one empty.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "ledger/account_window.h"
#include "ledger/counter_deltas.h"
#include "ledger/device_quality.h"
#include "ledger/efficiency_mean.h"
#include "ledger/energy_meter.h"
#include "ledger/observation.h"
#include "ledger/process_sm_meter.h"

namespace gpuledger::ledger {

// Allocation against use from the device side in one slot's window, seconds by account.
struct SlotUse {
  bool known = false;  // the device side's use was observed in the window
  std::map<std::string, double> used_unallocated, allocated_unused;
  std::map<std::string, AccountLabels> labels;  // of the accounts that used it without holding it
};

// One slot's window as integrated: account_window()'s input without holders
// and names (those are the closer's), and what the device checks need.
struct IntegratedSlot {
  SlotWindow window;
  // Whose utilisation the busy fraction averages: a suspect source's drops it.
  bool busy_from_dcgm = false, busy_from_nvml = false;
  SlotUse use;
};

class SlotIntegrator {
 public:
  // The thresholds of the device data's cross-checks (device_quality.h).
  void set_device_checks(const DeviceCheckConfig& config) { cross_check_.set_config(config); }
  // `obs`'s device readings, allocation against use and the live bytes of
  // `streams` (CounterDeltas::streams: the last readings) over (t0, t1].
  void integrate(const Observation& obs, double t0, double t1,
                 const std::map<std::pair<std::string, std::string>, StreamReading>& streams);
  // `account`'s activity on `slot` in the open window: where counter deltas go.
  Activity& activity(const std::string& slot, const std::string& account) { return slots_[slot].activity[account]; }
  // The SM time NVML saw since the last call, into the open window's
  // activity; the first call is the baseline.
  void add_process_sm(const Observation& obs);
  const std::map<std::string, ProcessSmMeter::Unattributed>& unattributed_sm() const {
    return sm_meter_.unattributed_seconds();
  }
  void observe_energy(const Observation& obs);
  // NVML's used bytes of each account on each slot now: the peaks of the next interval.
  void remember_nvml_used(const Observation& obs);
  // The open window saw the billing probe set (Observation::hot_path_probed).
  void note_probe_set(const Observation& obs) { hot_path_unprobed_ = hot_path_unprobed_ || !obs.hot_path_probed; }
  bool launches_probed() const { return !hot_path_unprobed_; }
  // `slot`'s open window, ending at `end` (its energy is taken up to there).
  IntegratedSlot window(const GpuSlot& slot, int64_t end);
  // The cross-checks' verdict on `uuid`'s window (DeviceCrossCheck::close).
  DeviceVerdict verdict(const std::string& uuid, const WindowWitness& witness) {
    return cross_check_.close(uuid, witness);
  }
  // The open window is written: the next one starts empty.
  void next_window();

 private:
  struct SlotState {
    std::map<std::string, Activity> activity;
    double busy_weighted = 0, busy_time = 0;
    EfficiencyMean efficiency;                             // the device's ratios, weighted by time
    std::optional<double> vram_capacity;                   // the last reading
    std::map<std::string, uint64_t> vram_peak, nvml_peak;  // by account: the window's peaks
    double busy_dcgm_time = 0, busy_nvml_time = 0;        // whose utilisation busy_weighted holds
    SlotUse use;
    bool nvml_splits_processes = false;  // Observation::nvml_splits_processes, at an observation of the window
  };
  void integrate_device(const Observation& obs, double t0, double t1);
  void integrate_use(const Observation& obs, double dt);
  void integrate_vram(const std::map<std::pair<std::string, std::string>, StreamReading>& streams, double dt);

  std::map<std::string, SlotState> slots_;
  std::map<std::pair<std::string, std::string>, uint64_t> nvml_used_;  // (account, slot): NVML used bytes now
  ProcessSmMeter sm_meter_;
  EnergyMeter energy_meter_;
  DeviceCrossCheck cross_check_;
  bool hot_path_unprobed_ = false;
};

}  // namespace gpuledger::ledger
