#include "ledger/split_source.h"

#include <algorithm>
#include <cmath>

namespace gpuledger::ledger {

std::string_view to_string(SplitSource source) {
  switch (source) {
    case SplitSource::kNvml: return "nvml";
    case SplitSource::kSpans: return "spans";
    case SplitSource::kLaunches: return "launches";
    case SplitSource::kVram: return "vram";
    case SplitSource::kSpansUnattributed: return "spans-unattributed";
    case SplitSource::kLaunchesUnattributed: return "launches-unattributed";
    case SplitSource::kNone: return "none";
  }
  return "none";
}

double largest_share_gap_points(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  double gap = 0;
  auto at = [](const std::map<std::string, double>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  for (const auto& [k, v] : a) gap = std::max(gap, std::fabs(v - at(b, k)));
  for (const auto& [k, v] : b) gap = std::max(gap, std::fabs(v - at(a, k)));
  return gap * 100.0;
}

}  // namespace gpuledger::ledger
