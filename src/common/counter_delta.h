#pragma once
// The one rule for reading a cumulative counter again: a value below the last
// reading means the counter was reset (its kernel map entry re-created, the
// driver or the agent restarted, a workload id reused), so it counts from 0
// and all of the new value is new. Used wherever such a counter is folded into
// totals: the kernel counters (probes/usage_totals.cpp), the ioctl counters
// (device/ioctl_plane.cpp), the efficiency apportioning
// (node/workload_efficiency.cpp), the ledger's workload totals
// (ledger/counter_deltas.cpp) and NVML's per-process SM time
// (ledger/process_sm_meter.cpp).

namespace gpuledger {

template <class T>
struct CounterDelta {
  T delta;     // what the counter grew by since the last reading
  bool reset;  // the counter went down: `delta` is all of the new value
};

template <class T>
constexpr CounterDelta<T> counter_delta(T previous, T current) {
  if (current < previous) return {current, true};
  return {current - previous, false};
}

}  // namespace gpuledger
