#pragma once
// A stand-in dcgm-exporter's page with the noise of a real one: each page is
// a new sample, every field jitters around its GPU's level (utilisation in
// whole percent, as DCGM_FI_DEV_GPU_UTIL prints it; the profiling ratios with
// their many decimals), power follows the load and the energy counter grows
// with it. Used by `gpuledger demo` and the tests of the ledger's cross-checks
// (ledger/device_quality.h), which must not call a noisy healthy GPU suspect.
//
// A GPU can be made faulty the ways real ones are:
//   dead_profiling   every DCGM_FI_PROF_* field reads 0 (a DCGM profiling
//                    watch that died), while its GPU_UTIL and power go on;
//   frozen           every field repeats its first page's value (an exporter
//                    serving a cached page), the energy counter included.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gpuledger::simulation {

struct StandInGpu {
  std::string uuid;
  unsigned index = 0;
  std::string model = "gpuledger simulated H100";
  // The load levels the fields jitter around (ratios 0..1).
  double utilization = 0.5, sm_active = 0.4, sm_occupancy = 0.25, tensor_active = 0.1, dram_active = 0.2;
  bool dead_profiling = false;
  bool frozen = false;
};

class DcgmStandIn {
 public:
  explicit DcgmStandIn(std::vector<StandInGpu> gpus, uint32_t seed = 33);
  // The page at `now` (Unix seconds; later than the previous call's).
  std::string page(double now);
  std::vector<StandInGpu>& gpus() { return gpus_; }

 private:
  struct Sample {
    double gr, sm, occupancy, tensor, dram, util_percent, power, energy_mj;
  };
  Sample next(size_t i, double now);
  std::vector<StandInGpu> gpus_;
  std::vector<Sample> last_;
  std::vector<bool> started_;
  double last_time_ = 0;
  std::mt19937 rng_;
};

}  // namespace gpuledger::simulation
