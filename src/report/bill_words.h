#pragma once
// The bill's plain words, the same in every view: what an empty range means,
// why a cell says "unknown", and what the range's time was (watched, agent
// down, before the agent started, no data, not yet).
#include <string>
#include <vector>

#include "report/report.h"

namespace gpuledger::report {

// "Team", "Namespace", "Pod", "Workload", "GPU": the grouping's column header for people.
std::string group_title(GroupBy by);
// The report's rows that are special accounts, with what each holds (special_accounts.h).
std::vector<std::pair<std::string, std::string>> special_accounts_of(const Report& report);
// "No windows in this range: ..." (the range, and what the store holds).
std::string no_windows_sentence(const Report& report);
// One line per column that shows "unknown" somewhere in the report's rows, saying why.
std::vector<std::string> unknown_explanations(const Report& report);
// The range's time told apart, and the device coverage, one line each.
std::vector<std::string> coverage_lines(const Report& report);
// `text` wrapped at spaces to lines of at most `width` bytes (a longer word is
// cut), each starting with `first` (the first line) or `rest`, each ending "\n".
std::string wrap_text(const std::string& text, size_t width, const std::string& first, const std::string& rest);

}  // namespace gpuledger::report
