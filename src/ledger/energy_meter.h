#pragma once
// A GPU's energy in each accounting window, in integer millijoules, from the
// best source the device plane offers. Pure: the caller passes the times.
//
// Sources, best first (the window is labelled with the weakest one it used):
//  * "dcgm" / "nvml": the device's total-energy counter
//    (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, nvmlDeviceGetTotalEnergyConsumption;
//    millijoules since the driver loaded). The energy of an interval is the
//    counter's growth. A counter that goes backwards (driver reloaded, GPU
//    reset) or changes source restarts: that interval falls back to power.
//  * "power_integrated": power draw (watts) integrated over time, trapezoid
//    between two readings, or the one known reading held over the interval.
//  * none: no counter and no power in the window - energy is unknown, never 0.
//
// Rounding: energy accrues exactly (long double joules); take() hands out
// whole millijoules and carries the fraction to the next window, so the sum
// of windows never drifts from the device's energy by more than 1 mJ.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace gpuledger::ledger {

enum class EnergySource { kDcgm, kNvml, kPowerIntegrated };
std::string_view to_string(EnergySource source);  // "dcgm", "nvml", "power_integrated"

struct EnergyReading {
  double time = 0;                          // Unix seconds
  std::optional<double> counter_joules;     // total-energy counter, joules
  EnergySource counter_source = EnergySource::kNvml;  // kDcgm or kNvml
  std::optional<double> power_watts;
};

struct WindowEnergy {
  int64_t millijoules = 0;
  EnergySource source = EnergySource::kPowerIntegrated;
};

class EnergyMeter {
 public:
  // Readings of one GPU must come in time order; an older or equal time is ignored.
  void observe(const std::string& gpu, const EnergyReading& reading);
  // The energy accrued since the last take(); nullopt when nothing measured it.
  std::optional<WindowEnergy> take(const std::string& gpu);

 private:
  struct State {
    std::optional<EnergyReading> last;
    long double joules = 0;       // accrued, not yet taken
    long double carry_joules = 0;  // fraction of a millijoule left from the last take
    bool measured = false;
    std::optional<EnergySource> weakest;
  };
  std::map<std::string, State> gpus_;
};

}  // namespace gpuledger::ledger
