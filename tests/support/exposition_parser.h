#pragma once
// Test support: reads a Prometheus text exposition into samples, so tests can
// ask for one series' value by name and labels.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> parse_exposition(const std::string& text);

// The value of the one sample named `name` whose labels include `match`.
std::optional<double> sample_value(const std::vector<Sample>& samples, const std::string& name,
                                   const std::map<std::string, std::string>& match);

}  // namespace gpuledger::testing
