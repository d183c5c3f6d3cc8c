#include "report/split_sources.h"

#include <algorithm>
#include <vector>

#include "ledger/split_source.h"

namespace gpuledger::report {

std::string split_source_name(const std::string& stored) { return stored.empty() ? "unknown" : stored; }

std::string split_source_cell(const std::map<std::string, double>& hours) {
  std::vector<std::pair<std::string, double>> by_hours(hours.begin(), hours.end());
  std::stable_sort(by_hours.begin(), by_hours.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [source, h] : by_hours)
    if (h > 0) out += (out.empty() ? "" : "+") + source;
  return out;
}

std::string split_source_summary(const std::map<std::string, int64_t>& windows) {
  std::vector<std::string> order(std::begin(ledger::kSplitSourceNames), std::end(ledger::kSplitSourceNames));
  order.push_back("unknown");
  int64_t total = 0;
  std::string counts;
  for (const auto& source : order) {
    auto it = windows.find(source);
    if (source == "none" || it == windows.end() || it->second == 0) continue;
    total += it->second;
    counts += (counts.empty() ? "" : ", ") + source + " " + std::to_string(it->second);
  }
  return total == 0 ? "" : counts + " of " + std::to_string(total) + " windows with users";
}

}  // namespace gpuledger::report
