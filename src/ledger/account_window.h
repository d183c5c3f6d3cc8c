#pragma once
// One slot's window priced, split (window_split.h) and filled into a
// WindowRecord: pure, no clock, no I/O.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ledger/energy_meter.h"
#include "ledger/observation.h"
#include "ledger/prices.h"
#include "ledger/store.h"
#include "ledger/window_split.h"

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
  // NVML's samples of the slot were seen to split it between processes
  // (Observation::nvml_splits_processes).
  bool nvml_splits_processes = false;
};

// Pure: prices, splits and fills the record for one slot and window.
// `cost_micros`: the window's cost as the slot's carry makes it (rate_remainder.h);
// unset: the window's own rounding (window_cost_micros).
WindowRecord account_window(const PriceBook& prices, int64_t start, int64_t end, const SlotWindow& in,
                            double observed_seconds, const std::string& source,
                            std::optional<int64_t> cost_micros = std::nullopt);

}  // namespace gpuledger::ledger
