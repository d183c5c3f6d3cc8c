#include "csv_records.h"

namespace gpuledger::testing {

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = was_quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear(), was_quoted = false;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field), field.clear(), was_quoted = false;
      rows.emplace_back();
      ++i;
    } else {
      field += c;
    }
  }
  if (!field.empty() || was_quoted) rows.back().push_back(field);
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

}  // namespace gpuledger::testing
