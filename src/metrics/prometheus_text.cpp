#include "metrics/prometheus_text.h"

#include <charconv>
#include <cmath>

#include "common/utf8.h"

namespace gpuledger::metrics {

std::string escape_label_value(std::string_view raw) {
  // Prometheus rejects a whole page over one label that is not UTF-8.
  const std::string value = valid_utf8(raw);
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_double(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, end);
}

void ExpositionWriter::family(std::string_view name, MetricType type, std::string_view help) {
  name_ = name;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += type == MetricType::kCounter ? " counter\n" : " gauge\n";
}

void ExpositionWriter::sample_prefix(const Labels& labels) {
  out_ += name_;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += escape_label_value(labels[i].second);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
}

void ExpositionWriter::sample(const Labels& labels, uint64_t value) {
  sample_prefix(labels);
  out_ += std::to_string(value);
  out_ += '\n';
}

void ExpositionWriter::sample(const Labels& labels, double value) {
  sample_prefix(labels);
  out_ += format_double(value);
  out_ += '\n';
}

}  // namespace gpuledger::metrics
