#pragma once
// Reads the CUDA probe program's maps into plain C++ values. Per-CPU values
// are summed here; nothing else in the agent knows which maps are per-CPU.
// The workload counters are one shared copy per entry (bpf/cuda_probes.bpf.c
// says why); they are read as per-CPU too if a map is (an older layout).
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <bpf/bpf.h>

#include "cuda_probes.h"

namespace gpuledger::probes {

// Counters are kept per workload (cgroup key) and device ordinal.
struct CounterKey {
  uint64_t cgroup_key = 0;
  uint32_t device = GL_DEVICE_UNKNOWN;
  auto operator<=>(const CounterKey&) const = default;
};

struct ErrorKey {
  CounterKey where;
  uint32_t call_id = 0;
  auto operator<=>(const ErrorKey&) const = default;
};

// Every key of a hash map, listed before any is used: the caller may delete
// or update entries while it walks them (a key deleted meanwhile is skipped
// by the lookup that follows).
template <typename Key>
std::vector<Key> map_keys(int fd) {
  std::vector<Key> keys;
  Key key{}, next{};
  for (const Key* prev = nullptr; bpf_map_get_next_key(fd, prev, &next) == 0; prev = &key) {
    keys.push_back(next);
    key = next;
  }
  return keys;
}

// How many copies a lookup of one value of this map returns: the possible
// CPUs for a per-CPU map, else 1.
size_t copies_per_value(int fd);
std::map<CounterKey, gl_counters> read_workload_counters(int fd);
std::map<ErrorKey, uint64_t> read_call_errors(int fd);
// cuGetExportTable requests by workload and table id (the CUuuid, as the
// driver's 8-4-4-4-12 hex text), the workload's device unknown.
struct ExportTableKey {
  CounterKey where;
  std::string table;
  auto operator<=>(const ExportTableKey&) const = default;
};
std::map<ExportTableKey, uint64_t> read_export_tables(int fd);
// Deletes the export-table entries of these workloads (they are gone).
void delete_export_tables(int fd, const std::set<uint64_t>& cgroup_keys);
std::map<uint32_t, gl_proc_state> read_processes(int fd);
std::array<uint64_t, GL_STAT_COUNT> read_stats(int fd);
uint64_t read_percpu_u64_sum(int fd, uint32_t index);
size_t count_entries(int fd);

// Deletes the live-allocation entries whose process is gone or was replaced by
// a new process with the same PID; returns how many were removed.
size_t prune_orphan_allocations(int live_allocations_fd, const std::map<uint32_t, gl_proc_state>& processes);
// Deletes context entries of processes that are gone.
size_t prune_orphan_contexts(int context_devices_fd, const std::map<uint32_t, gl_proc_state>& processes);

// Everything a process still holds, over all devices.
uint64_t live_bytes_of(const gl_proc_state& process);

}  // namespace gpuledger::probes
