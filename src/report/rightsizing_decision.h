#pragma once
// The decision for one unit (a pod or a workload): its evidence and what it
// paid and held in, one recommendation with its target, saving over the range,
// limitation and reason out. Pure. The rules, in order: rightsizing.h.
#include <cstdint>
#include <string>

#include "ledger/share_seconds.h"
#include "report/rightsizing.h"

namespace gpuledger::report {

// What the decision needs beyond the evidence (gathered by RightsizingBuilder).
struct UnitFacts {
  int64_t paid = 0;              // its charges in the range
  int64_t idle_paid = 0;         // of those, in its wholly idle windows
  int64_t held_window_cost = 0;  // the cost of the windows it held (each once)
  double held_seconds = 0;       // held share x window, summed
  double present_seconds = 0;    // the windows it was in
  int held_slices = 0;           // compute slices of what it holds (a whole GPU: its MIG table's); 0: no table
  bool mig_slot = false;         // it holds a MIG instance
  bool device_busy = false;      // a window of it had a device busy reading
  ledger::ShareSeconds shares;   // allocated against used (share_seconds.h)
};

struct Decision {
  Advice advice = Advice::kKeep;
  std::string target, why;
  bool limited = false;
  int64_t saving = 0;  // over the range, micro-units; >= 0
};

// The advice (rightsizing.h's order), then: less held time behind it than
// min_evidence makes it limited, saying so in why.
Decision decide(const UnitFacts& facts, const RightsizingEvidence& evidence, const RightsizingOptions& options);

// DRAM active p95 (device counters) at least kMemoryBoundDram and above both
// its SM active and tensor active p95s (tensor unknown: 0).
bool memory_bound(const RightsizingEvidence& evidence);

// a x b / c rounded half up (a, b >= 0, c > 0; 0 when c <= 0), without overflow.
int64_t mul_div_half_up(int64_t a, int64_t b, int64_t c);

}  // namespace gpuledger::report
