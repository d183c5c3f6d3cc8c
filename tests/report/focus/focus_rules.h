#pragma once
// Test support: runs the FinOps Foundation's FOCUS 1.2 rules (focus_rules.py
// over model-1.2.json) on FOCUS exports the real CLI wrote.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../cli_process.h"

namespace gpuledger::testing {

inline const std::string kFocusRulesDir = GL_FOCUS_RULES_DIR;

// Writes each export (without anything before its header line) to `dir` and
// checks them all; the exit status is 0 when no rule failed, and `out` the
// ran/passed/failed/skipped counts with every skip's reason.
inline Proc run_focus_rules(const std::filesystem::path& dir, const std::vector<std::string>& exports) {
  std::string files;
  for (size_t i = 0; i < exports.size(); ++i) {
    const std::string& csv = exports[i];
    const size_t header = csv.find("BilledCost,");
    const std::filesystem::path file = dir / ("focus-" + std::to_string(i) + ".csv");
    std::ofstream(file, std::ios::binary) << (header == std::string::npos ? csv : csv.substr(header));
    files += " " + file.string();
  }
  return run("python3 " + kFocusRulesDir + "/focus_rules.py " + kFocusRulesDir + "/model-1.2.json " + kFocusRulesDir +
             "/currency-codes.txt" + files);
}

}  // namespace gpuledger::testing
