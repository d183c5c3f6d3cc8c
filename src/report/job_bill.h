#pragma once
// A Slurm job's GPU bill at its end (`gpuledger job JOBID`): from the local
// store's windows of the account slurm/<job> (the workload id of the job's
// cgroup), what a site's epilog writes into the job's AdminComment or a user
// reads like seff:
//   held GPU-hours   its held part of each window's GPU (held_share x the
//                    slot's GPU fraction x the window's length)
//   busy GPU-hours   the GPU time attributed to it (gpu_busy_seconds)
//   SM active        of what it held: the device's SM-active ratio weighted
//                    by its held time (unknown where no window had one)
//   VRAM peak        the largest live bytes the probes saw it hold (NVML's
//                    used memory where the probes saw none)
//   energy           its energy charges, as the ledger split each window's
//                    energy (J, kWh), and the carbon of that energy where an
//                    intensity was configured
//   cost             its charges (busy, idle, memory), exact micro-units
// Numbers the store cannot say (no energy reading, no SM-active reading) are
// unknown, never 0.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger/store.h"

namespace gpuledger::report {

struct JobBill {
  std::string job;      // "1234"
  std::string account;  // "slurm/1234"
  std::string currency = "USD";
  int64_t windows = 0;  // windows it held or used a GPU in
  std::optional<int64_t> first_start, last_end;  // Unix seconds
  std::vector<std::string> gpus;  // slot uuids, sorted
  double held_gpu_hours = 0, busy_gpu_hours = 0;
  std::optional<double> sm_active;  // of the held time
  std::optional<uint64_t> vram_peak_bytes;
  std::optional<int64_t> energy_millijoules;  // nullopt: no window it was in had energy
  bool energy_partial = false;                // some of its windows had no energy reading
  std::optional<double> carbon_grams;         // nullopt: no intensity configured
  int64_t cost_micros = 0, busy_micros = 0, idle_micros = 0, memory_micros = 0;
};

// Throws Error when `job` is not a Slurm job id (digits).
JobBill job_bill(const std::string& job, const std::vector<ledger::WindowRecord>& windows);

std::string render_job_table(const JobBill& bill);
std::string render_job_json(const JobBill& bill);  // exact: micro-units and millijoules as integers

}  // namespace gpuledger::report
