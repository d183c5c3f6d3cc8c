#pragma once
// Writes the Prometheus text exposition format 0.0.4: one HELP and TYPE per
// family, then its samples, label values escaped as the format requires.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuledger::metrics {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { kCounter, kGauge };

class ExpositionWriter {
 public:
  // Starts a family; its samples must follow before the next family starts.
  void family(std::string_view name, MetricType type, std::string_view help);
  void sample(const Labels& labels, uint64_t value);
  void sample(const Labels& labels, double value);
  const std::string& text() const { return out_; }

 private:
  void sample_prefix(const Labels& labels);
  std::string out_;
  std::string name_;
};

// Escaping rules of the format: label values escape \, " and newline; HELP
// text escapes \ and newline.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);
// A float as the format prints it (NaN, +Inf, -Inf, shortest round-trip).
std::string format_double(double value);

}  // namespace gpuledger::metrics
