#pragma once
// Busy spans still open (bpf/cuda_probes.h, gl_open_spans), counted to date:
// each open span adds now - its start to the busy_ns of the workload and
// device that opened it, so a span crossing windows is spread over them and a
// launch never waited for is charged until something ends it (a wait, its
// context's destruction, its process's exit; docs/ledger.md).
//
// The counters are read before the spans: a span that ends in between is
// missing from that one read (it is in neither), never in both. busy_ns as
// reported never goes down for a key (BusyToDate keeps the largest reported),
// so such a read is only late, and the next one, with the span in the
// counters, catches up.
#include <cstdint>
#include <map>

#include "probes/map_reader.h"

namespace gpuledger::probes {

// Open time to date per workload and device: sum of now_ns - start over the open slots.
std::map<CounterKey, uint64_t> read_open_span_ns(int fd, uint64_t now_ns);

// Ends every open span without counting it: what the switch to the billing
// probe set does once the waits are no longer probed, so that a launch made
// before it is not charged as busy until its process exits. Returns how many.
size_t drop_open_spans(int fd);

// bpf_ktime_get_ns()'s clock (CLOCK_MONOTONIC), now.
uint64_t monotonic_now_ns();

class BusyToDate {
 public:
  // Adds `open` to the counters' busy_ns, never below what was last reported
  // for a key; forgets keys no longer in `counters`.
  void add(std::map<CounterKey, gl_counters>& counters, const std::map<CounterKey, uint64_t>& open);

 private:
  std::map<CounterKey, uint64_t> reported_;
};

}  // namespace gpuledger::probes
