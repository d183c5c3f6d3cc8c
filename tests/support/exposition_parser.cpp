#include "exposition_parser.h"

#include <sstream>
#include <stdexcept>

namespace gpuledger::testing {

std::vector<Sample> parse_exposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (i != std::string::npos && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;  // past ="
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;
    }
    s.value = std::stod(line.substr(line.find_first_not_of(' ', i)));
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> sample_value(const std::vector<Sample>& samples, const std::string& name,
                                   const std::map<std::string, std::string>& match) {
  std::optional<double> found;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) all = false;
    }
    if (!all) continue;
    if (found) throw std::runtime_error("more than one sample matches " + name);
    found = s.value;
  }
  return found;
}

}  // namespace gpuledger::testing
