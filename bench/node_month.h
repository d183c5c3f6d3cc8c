#pragma once
// A node's ledger as the agent writes it, made fast: N GPUs, W workloads
// (workload i holds GPU i % N), one window per GPU and window_seconds, over
// `days`, with device readings, busy/idle charges and efficiency, rolled up
// hourly every simulated hour exactly as the agent does (0: never). The
// charges add up to each window's cost, so the store's checks hold.
#include <cstdint>
#include <string>

namespace gpuledger::bench {

struct NodeMonthShape {
  int gpus = 8;
  int workloads = 20;
  int days = 30;
  int window_seconds = 60;
  int rollup_after_hours = 24;  // as the agent's default; 0: keep every window
  int64_t start = 1'793'491'200;  // 2026-11-01T00:00:00Z
};

struct NodeMonthStats {
  int64_t windows_written = 0;
  int64_t windows_stored = 0;
  int64_t cost_micros = 0;  // the sum of every charge written
  int64_t energy_millijoules = 0;  // the sum of every window's energy written
  double seconds = 0;       // writing (and rolling up)
  uint64_t bytes = 0;       // the store file after the writer closed it
};

NodeMonthStats write_node_month(const std::string& path, const NodeMonthShape& shape);

}  // namespace gpuledger::bench
