#pragma once
// What gpuledger has counted for one workload: the kernel counters, summed over
// CPUs and over time, plus errors by entry-point name.
#include <cstdint>
#include <map>
#include <string>

#include "cuda_probes.h"

namespace gpuledger::probes {

struct Usage {
  gl_counters counters{};
  std::map<std::string, uint64_t> errors_by_call;
  // cuGetExportTable requests by table id (the CUuuid as hex text).
  std::map<std::string, uint64_t> export_tables;

  // Device memory held now. Allocations made before the agent attached are not
  // known, so neither are their frees (counted apart as untracked).
  uint64_t live_bytes() const {
    return counters.allocated_bytes > counters.freed_bytes ? counters.allocated_bytes - counters.freed_bytes : 0;
  }
  Usage& operator+=(const Usage& other);
  bool operator==(const Usage& other) const;
};

// The estimate of GPU-busy seconds from a workload's counters: the kernel's
// launch-to-completion spans (gl_counters::busy_ns) when the ABI has that
// field; otherwise the time blocked in synchronisation calls (sync_ns), the
// closest span the kernel side measured before. Chosen at compile time.
double busy_seconds_estimate(const Usage& usage);

}  // namespace gpuledger::probes
