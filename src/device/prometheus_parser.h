#pragma once
// A small parser for the Prometheus text exposition format 0.0.4, for reading
// dcgm-exporter. Strict per line, tolerant per page: a line that is not valid
// (bad escape, unterminated label, trailing junk, unparsable value) is skipped
// and reported in `errors`; the rest of the page is still read. Accepts
// comments, HELP/TYPE, blank lines, CRLF line ends, NaN/+Inf/-Inf, optional
// millisecond timestamps, a trailing comma in a label set, and whitespace
// around labels. Never throws on input; bounded work per byte.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuledger::device {

struct ParsedSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // in page order, unescaped
  double value = 0;
  std::optional<int64_t> timestamp_ms;

  // The value of label `name`, or nullptr.
  const std::string* label(std::string_view name) const;
};

struct ParseError {
  size_t line = 0;  // 1-based
  std::string message;
};

struct ParsedPage {
  std::vector<ParsedSample> samples;
  std::map<std::string, std::string> types;  // family -> "gauge", "counter", ...
  std::map<std::string, std::string> help;   // family -> unescaped HELP text
  std::vector<ParseError> errors;            // at most kMaxErrors kept; error_count counts all
  size_t error_count = 0;
  static constexpr size_t kMaxErrors = 32;
};

ParsedPage parse_prometheus_text(std::string_view text);

// One sample line (no newline); nullopt and `error` set when it is not valid.
std::optional<ParsedSample> parse_sample_line(std::string_view line, std::string* error = nullptr);

}  // namespace gpuledger::device
