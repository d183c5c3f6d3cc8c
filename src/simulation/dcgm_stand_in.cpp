#include "simulation/dcgm_stand_in.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuledger::simulation {

DcgmStandIn::DcgmStandIn(std::vector<StandInGpu> gpus, uint32_t seed)
    : gpus_(std::move(gpus)), last_(gpus_.size()), started_(gpus_.size(), false), rng_(seed) {}

DcgmStandIn::Sample DcgmStandIn::next(size_t i, double now) {
  const StandInGpu& g = gpus_[i];
  if (g.frozen && started_[i]) return last_[i];
  std::normal_distribution<double> noise(0.0, 1.0);
  auto ratio = [&](double level, double sd) {
    if (level <= 0) return 0.0;  // an idle pipe reads 0, as on real GPUs
    return std::clamp(level + sd * noise(rng_), 0.0005, 1.0);
  };
  Sample s;
  // GPU_UTIL: whole percent, noisier (a kernel running at each ~1/6 s sample or not).
  s.util_percent = std::clamp(std::round(g.utilization * 100 + 4 * noise(rng_)), 0.0, 100.0);
  if (g.utilization >= 1) s.util_percent = 100;
  if (g.utilization <= 0) s.util_percent = 0;
  s.gr = ratio(std::min(1.0, g.utilization * 0.97), 0.02);
  s.sm = ratio(g.sm_active, 0.03);
  s.occupancy = ratio(g.sm_occupancy, 0.02);
  s.tensor = ratio(g.tensor_active, 0.02);
  s.dram = ratio(g.dram_active, 0.02);
  if (g.dead_profiling) s.gr = s.sm = s.occupancy = s.tensor = s.dram = 0;
  s.power = std::max(20.0, 65 + 550 * g.utilization + 6 * noise(rng_));
  const double dt = started_[i] ? std::max(0.0, now - last_time_) : 0;
  s.energy_mj = (started_[i] ? last_[i].energy_mj : 4.2e9 + 1e6 * i) + std::round(s.power * dt * 1000);
  return s;
}

std::string DcgmStandIn::page(double now) {
  std::vector<Sample> samples;
  for (size_t i = 0; i < gpus_.size(); ++i) samples.push_back(next(i, now));
  struct Field {
    const char* name;
    double Sample::*value;
    const char* format;
  };
  const Field fields[] = {{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", &Sample::gr, "%.6f"},
                          {"DCGM_FI_PROF_SM_ACTIVE", &Sample::sm, "%.6f"},
                          {"DCGM_FI_PROF_SM_OCCUPANCY", &Sample::occupancy, "%.6f"},
                          {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", &Sample::tensor, "%.6f"},
                          {"DCGM_FI_PROF_DRAM_ACTIVE", &Sample::dram, "%.6f"},
                          {"DCGM_FI_DEV_GPU_UTIL", &Sample::util_percent, "%.0f"},
                          {"DCGM_FI_DEV_POWER_USAGE", &Sample::power, "%.3f"},
                          {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", &Sample::energy_mj, "%.0f"}};
  std::string out;
  for (const auto& f : fields) {
    out += std::string("# HELP ") + f.name + " simulated by gpuledger's stand-in dcgm-exporter\n# TYPE " + f.name +
           (std::string(f.name).find("ENERGY") != std::string::npos ? " counter\n" : " gauge\n");
    for (size_t i = 0; i < gpus_.size(); ++i) {
      char value[64];
      std::snprintf(value, sizeof(value), f.format, samples[i].*f.value);
      out += std::string(f.name) + "{gpu=\"" + std::to_string(gpus_[i].index) + "\",UUID=\"" + gpus_[i].uuid +
             "\",device=\"nvidia" + std::to_string(gpus_[i].index) + "\",modelName=\"" + gpus_[i].model +
             "\",Hostname=\"stand-in\"} " + value + "\n";
    }
  }
  for (size_t i = 0; i < gpus_.size(); ++i) {
    last_[i] = samples[i];
    started_[i] = true;
  }
  last_time_ = now;
  return out;
}

}  // namespace gpuledger::simulation
