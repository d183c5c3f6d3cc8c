#include "report/memory_size_note.h"

#include <algorithm>
#include <map>

#include "report/report_text.h"

namespace gpuledger::report {

void add_memory_size_note(Report& report, const std::vector<ledger::Store::MemorySizeUnknown>& spans) {
  std::map<std::string, std::pair<int64_t, int64_t>> by_slot;  // uuid -> first start, last end (in range)
  for (const auto& s : spans) {
    const int64_t a = std::max(s.start, report.from), b = std::min(s.end, report.to);
    if (a >= b) continue;
    auto [it, fresh] = by_slot.try_emplace(s.uuid, a, b);
    if (!fresh) it->second = {std::min(it->second.first, a), std::max(it->second.second, b)};
  }
  if (by_slot.empty()) return;
  const bool one = by_slot.size() == 1;
  std::string note = "No memory part (vram_per_gib_hour) was billed on " + std::to_string(by_slot.size()) +
                     (one ? " GPU slot while its" : " GPU slots while their") +
                     " memory size was unknown (MIG instances, GPUs without a DCGM or NVML memory reading, time the "
                     "agent was down): the whole cost of those windows went by the cost policy.";
  size_t listed = 0;
  for (const auto& [uuid, span] : by_slot) {
    if (listed++ == 5) {
      note += " and " + std::to_string(by_slot.size() - 5) + " more";
      break;
    }
    note += (listed == 1 ? " " : "; ") + uuid + " from " + format_date_time(span.first) + " to " +
            format_date_time(span.second);
  }
  report.notes.push_back(note + ".");
}

}  // namespace gpuledger::report
