#pragma once
// Who used a window's energy: the same split as the window's cost
// (window_split.h) - busy energy by activity weight, idle energy by the idle
// policy - applied to the device's energy in integer millijoules, so the
// parts add up to the device's energy exactly (largest remainder).
#include <cstdint>
#include <string>
#include <vector>

#include "ledger/energy_meter.h"
#include "ledger/window_split.h"

namespace gpuledger::ledger {

struct EnergyCharge {
  std::string account;
  ChargeKind kind = ChargeKind::kBusy;
  int64_t millijoules = 0;
  bool operator==(const EnergyCharge&) const = default;
};

struct EnergySplit {
  std::vector<EnergyCharge> charges;  // sorted by (account, kind); same rows rule as cost
  EnergySource source = EnergySource::kPowerIntegrated;
  int64_t busy_millijoules = 0;
  int64_t idle_millijoules = 0;
};

// `window` is the window's cost input (its cost_micros is ignored): holders,
// activity, device busy fraction and idle policy. Throws Error on negative energy.
EnergySplit split_window_energy(const WindowInput& window, const WindowEnergy& energy);

// kWh from millijoules (1 kWh = 3.6e9 mJ).
double millijoules_to_kwh(int64_t millijoules);

}  // namespace gpuledger::ledger
