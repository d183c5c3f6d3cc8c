#include "ledger/energy_meter.h"

#include <algorithm>
#include <cmath>

namespace gpuledger::ledger {

std::string_view to_string(EnergySource source) {
  switch (source) {
    case EnergySource::kDcgm: return "dcgm";
    case EnergySource::kNvml: return "nvml";
    case EnergySource::kPowerIntegrated: return "power_integrated";
  }
  return "unknown";
}

namespace {

bool usable(const std::optional<double>& v) { return v && std::isfinite(*v) && *v >= 0; }

// Weaker = larger enum value (counters before power).
EnergySource weaker(std::optional<EnergySource> a, EnergySource b) {
  return a && static_cast<int>(*a) > static_cast<int>(b) ? *a : b;
}

}  // namespace

void EnergyMeter::observe(const std::string& gpu, const EnergyReading& r) {
  State& s = gpus_[gpu];
  if (!std::isfinite(r.time)) return;
  if (s.last && r.time <= s.last->time) return;
  if (s.last) {
    const EnergyReading& p = *s.last;
    s.prev_time = p.time;
    s.prev_joules = s.joules;
    const double dt = r.time - p.time;
    if (usable(r.counter_joules) && usable(p.counter_joules) && r.counter_source == p.counter_source &&
        *r.counter_joules >= *p.counter_joules) {
      s.joules += static_cast<long double>(*r.counter_joules) - static_cast<long double>(*p.counter_joules);
      s.weakest = weaker(s.weakest, r.counter_source);
      s.measured = true;
    } else if (usable(r.power_watts) || usable(p.power_watts)) {
      // Trapezoid when both ends are known; else the known end held over the interval.
      double w0 = usable(p.power_watts) ? *p.power_watts : *r.power_watts;
      double w1 = usable(r.power_watts) ? *r.power_watts : *p.power_watts;
      s.joules += static_cast<long double>((w0 + w1) / 2.0) * dt;
      s.weakest = weaker(s.weakest, EnergySource::kPowerIntegrated);
      s.measured = true;
    }
  }
  s.last = r;
}

std::optional<WindowEnergy> EnergyMeter::take(const std::string& gpu, double until) {
  auto it = gpus_.find(gpu);
  if (it == gpus_.end() || !it->second.measured || !it->second.last) return std::nullopt;
  State& s = it->second;
  // Accrued up to `until`: all of it, or the last interval cut at `until`.
  long double upto = s.joules;
  const double t1 = s.last->time;
  const bool crosses = t1 > until;
  if (crosses) {
    const double t0 = s.prev_time;
    const long double f = until <= t0 || t1 <= t0 ? 0.0L : static_cast<long double>(until - t0) / (t1 - t0);
    upto = s.prev_joules + (s.joules - s.prev_joules) * f;
  }
  upto = std::max(upto, s.taken_joules);
  const long double total = upto - s.taken_joules + s.carry_joules;
  const long double mj = std::floor(total * 1000.0L);
  WindowEnergy out{std::max<int64_t>(0, static_cast<int64_t>(mj)), s.weakest.value_or(EnergySource::kPowerIntegrated)};
  s.carry_joules = std::max(0.0L, total - mj / 1000.0L);
  s.taken_joules = upto;
  s.measured = crosses;  // the rest of the last interval belongs to the next window
  if (!crosses) s.weakest.reset();
  return out;
}

}  // namespace gpuledger::ledger
