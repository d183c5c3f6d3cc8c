#include "attribution/map_full_log.h"

#include <fmt/format.h>

#include "common/log.h"

namespace gpuledger::attribution {

MapFullLog::MapFullLog(uint32_t max_workloads, std::chrono::seconds repeat) : repeat_(repeat) {
  const std::string workloads = fmt::format(
      "the workload map is full ({} entries, --max-workloads): calls of new workloads are counted under "
      "__overflow__ (gpuledger_bpf_overflow_total)",
      max_workloads);
  watched_ = {
      {GL_STAT_WORKLOADS_FULL, "workload map", workloads},
      {GL_STAT_WORKLOADS_NOMEM, "workload entry allocation", "new workload entries cannot be allocated: their calls are counted under "
                                "__overflow__ (gpuledger_bpf_overflow_total{reason=\"workload_entry_allocation_failed\"})"},
      {GL_STAT_PROCS_FULL, "process map", "the process map is full: new CUDA processes' live memory is not tracked"},
      {GL_STAT_ALLOCS_UNTRACKED, "allocation map", "the allocation map is full: some allocations' frees cannot be paired"},
      {GL_STAT_THREADS_FULL, "thread map", "the thread map is full: some threads' device and spans are unknown"},
  };
}

std::vector<std::string> MapFullLog::update(const std::array<uint64_t, GL_STAT_COUNT>& stats, Clock::time_point now) {
  std::vector<std::string> lines;
  for (auto& w : watched_) {
    const uint64_t value = stats[static_cast<size_t>(w.stat)];
    if (!w.seen) {  // what a re-adopted or earlier map counted is not news
      w.seen = true;
      w.last = w.at_last_line = value;
      continue;
    }
    const bool grew = value > w.last;
    if (grew) w.last_growth = now;
    if (grew && !w.full) {
      w.full = true;
      w.last_line = now;
      lines.push_back(fmt::format("{} ({} so far)", w.what, value - w.at_last_line));
      w.at_last_line = value;
    } else if (grew && now - w.last_line >= repeat_) {
      w.last_line = now;
      lines.push_back(fmt::format("still: {} ({} more since the last report)", w.what, value - w.at_last_line));
      w.at_last_line = value;
    } else if (!grew && w.full && now - w.last_growth >= repeat_) {
      w.full = false;
      w.last_line = now;
      lines.push_back(fmt::format("{}: no overflow for {} s ({} since the last report)", w.name, repeat_.count(),
                                  value - w.at_last_line));
      w.at_last_line = value;
    }
    w.last = value;
  }
  for (const auto& line : lines) spdlog::warn("{}", line);
  return lines;
}

}  // namespace gpuledger::attribution
