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
// Window boundaries: energy accrues per interval between two readings; an
// interval that crosses a window's end is split there in proportion to time
// (the device's energy taken as linear within an interval), so a window gets
// its own energy, and a stalled agent's gap is spread over the gap's windows.
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
  // The energy accrued since the last take() up to `until` (a window's end,
  // Unix seconds); nullopt when nothing measured it.
  std::optional<WindowEnergy> take(const std::string& gpu, double until);

 private:
  struct State {
    std::optional<EnergyReading> last;
    double prev_time = 0;          // start of the interval that ends at `last`
    long double prev_joules = 0;   // accrued up to prev_time
    long double joules = 0;        // accrued up to last->time (since the meter began)
    long double taken_joules = 0;  // accrued up to the last take's boundary
    long double carry_joules = 0;  // fraction of a millijoule left from the last take
    bool measured = false;         // something measured since the last take's boundary
    std::optional<EnergySource> weakest;
  };
  std::map<std::string, State> gpus_;
};

}  // namespace gpuledger::ledger
