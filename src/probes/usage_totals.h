#pragma once
// Turns readings of the kernel maps into totals that never go backwards. A map
// entry is monotonic while it lives; the agent deletes entries of workloads
// that are gone, and the map may hand out a fresh entry for the same key later.
// Totals are built from deltas, so neither loses or repeats a count.
#include <cstdint>
#include <map>
#include <mutex>
#include <set>

#include "probes/map_reader.h"
#include "probes/usage.h"

namespace gpuledger::probes {

class CallNameLookup {
 public:
  virtual ~CallNameLookup() = default;
  virtual std::string call_name(uint32_t call_id) const = 0;
};

class UsageTotals {
 public:
  // Folds a reading of the whole maps.
  void absorb(const std::map<probes::CounterKey, gl_counters>& counters,
              const std::map<probes::ErrorKey, uint64_t>& errors, const CallNameLookup& names);
  // The map entries of a workload (every device) were deleted after their
  // last reading: start over.
  void forget_entries(uint64_t cgroup_key);
  // Folds a reading of the export-table requests map.
  void absorb_export_tables(const std::map<probes::ExportTableKey, uint64_t>& tables);
  // The same for many at once: one pass, however many workloads left together.
  void forget_entries(const std::set<uint64_t>& cgroup_keys);
  // Workloads gone for good (retired): their totals leave too, so memory and
  // the exported series follow the live workloads, not history.
  void drop(const std::set<uint64_t>& cgroup_keys);
  std::map<probes::CounterKey, Usage> totals() const;

 private:
  mutable std::mutex mu_;
  std::map<probes::CounterKey, Usage> totals_;
  std::map<probes::CounterKey, gl_counters> last_counters_;
  std::map<probes::ErrorKey, uint64_t> last_errors_;
  std::map<probes::ExportTableKey, uint64_t> last_tables_;
};

}  // namespace gpuledger::probes
