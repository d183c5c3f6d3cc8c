#include "device/prometheus_parser.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace gpuledger::device {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_label_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_label_char(char c) { return is_label_start(c) || (c >= '0' && c <= '9'); }
bool is_blank(char c) { return c == ' ' || c == '\t'; }

void skip_blanks(std::string_view s, size_t& i) {
  while (i < s.size() && is_blank(s[i])) ++i;
}

std::string_view trim(std::string_view s) {
  size_t b = 0;
  while (b < s.size() && is_blank(s[b])) ++b;
  size_t e = s.size();
  while (e > b && is_blank(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// A float as Prometheus writes it: decimal/exponent, NaN, +Inf, -Inf (and
// Inf/+1.5, which Go's ParseFloat takes too).
std::optional<double> parse_float(std::string_view t) {
  if (t.empty() || t.size() > 64) return std::nullopt;
  bool negative = false;
  if (t[0] == '+' || t[0] == '-') {
    negative = t[0] == '-';
    t.remove_prefix(1);
    if (t.empty()) return std::nullopt;
  }
  auto lower_eq = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if ((a[i] | 0x20) != b[i]) return false;
    return true;
  };
  if (lower_eq(t, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (lower_eq(t, "inf") || lower_eq(t, "infinity"))
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  // Digits, '.', exponent only: no hex floats, no "nan(...)".
  for (char c : t)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return std::nullopt;
  if (t[0] == '+' || t[0] == '-') return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (p != t.data() + t.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Too large: +-Inf as Go would give; too small: 0.
    bool huge = false;
    auto e = t.find_first_of("eE");
    if (e == std::string_view::npos) huge = true;
    else huge = t.substr(e + 1).find('-') == std::string_view::npos;
    v = huge ? std::numeric_limits<double>::infinity() : 0.0;
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

bool fail(std::string* error, const char* message) {
  if (error) *error = message;
  return false;
}

// Parses `{name="value",...}` starting at s[i] == '{'.
bool parse_labels(std::string_view s, size_t& i, std::vector<std::pair<std::string, std::string>>& out,
                  std::string* error) {
  ++i;  // '{'
  for (;;) {
    skip_blanks(s, i);
    if (i >= s.size()) return fail(error, "unterminated label set");
    if (s[i] == '}') {
      ++i;
      return true;
    }
    if (!is_label_start(s[i])) return fail(error, "bad label name");
    size_t b = i;
    while (i < s.size() && is_label_char(s[i])) ++i;
    std::string name(s.substr(b, i - b));
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '=') return fail(error, "expected '=' after label name");
    ++i;
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '"') return fail(error, "expected '\"' to open label value");
    ++i;
    std::string value;
    for (;;) {
      if (i >= s.size()) return fail(error, "unterminated label value");
      char c = s[i++];
      if (c == '"') break;
      if (c == '\\') {
        if (i >= s.size()) return fail(error, "unterminated escape");
        char e = s[i++];
        if (e == '\\') value += '\\';
        else if (e == '"') value += '"';
        else if (e == 'n') value += '\n';
        else return fail(error, "invalid escape in label value");
      } else {
        value += c;
      }
    }
    for (const auto& [n, v] : out)
      if (n == name) return fail(error, "duplicate label");
    out.emplace_back(std::move(name), std::move(value));
    skip_blanks(s, i);
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    skip_blanks(s, i);
    if (i < s.size() && s[i] == '}') {
      ++i;
      return true;
    }
    return fail(error, "expected ',' or '}' in label set");
  }
}

std::string unescape_help(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
      out += s[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

const std::string* ParsedSample::label(std::string_view wanted) const {
  for (const auto& [n, v] : labels)
    if (n == wanted) return &v;
  return nullptr;
}

std::optional<ParsedSample> parse_sample_line(std::string_view s, std::string* error) {
  ParsedSample sample;
  size_t i = 0;
  skip_blanks(s, i);
  if (i >= s.size() || !is_name_start(s[i])) {
    fail(error, "bad metric name");
    return std::nullopt;
  }
  size_t b = i;
  while (i < s.size() && is_name_char(s[i])) ++i;
  sample.name = std::string(s.substr(b, i - b));
  size_t after_name = i;
  skip_blanks(s, i);
  if (i < s.size() && s[i] == '{') {
    if (!parse_labels(s, i, sample.labels, error)) return std::nullopt;
  } else {
    i = after_name;
  }
  if (i >= s.size() || !is_blank(s[i])) {
    fail(error, i >= s.size() ? "missing value" : "expected blank before value");
    return std::nullopt;
  }
  skip_blanks(s, i);
  b = i;
  while (i < s.size() && !is_blank(s[i])) ++i;
  auto value = parse_float(s.substr(b, i - b));
  if (!value) {
    fail(error, "bad sample value");
    return std::nullopt;
  }
  sample.value = *value;
  skip_blanks(s, i);
  if (i < s.size()) {
    b = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    std::string_view ts = s.substr(b, i - b);
    int64_t t = 0;
    auto [p, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
    if (ec != std::errc() || p != ts.data() + ts.size()) {
      fail(error, "bad timestamp");
      return std::nullopt;
    }
    sample.timestamp_ms = t;
    skip_blanks(s, i);
    if (i < s.size()) {
      fail(error, "trailing characters after timestamp");
      return std::nullopt;
    }
  }
  return sample;
}

ParsedPage parse_prometheus_text(std::string_view text) {
  ParsedPage page;
  size_t line_no = 0;
  auto add_error = [&](std::string message) {
    ++page.error_count;
    if (page.errors.size() < ParsedPage::kMaxErrors) page.errors.push_back({line_no, std::move(message)});
  };
  while (!text.empty()) {
    ++line_no;
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view t = trim(line);
    if (t.empty()) continue;
    if (t[0] == '#') {
      std::string_view rest = trim(t.substr(1));
      bool is_help = rest.substr(0, 5) == "HELP " || rest.substr(0, 5) == "HELP\t";
      bool is_type = rest.substr(0, 5) == "TYPE " || rest.substr(0, 5) == "TYPE\t";
      if (!is_help && !is_type) continue;  // plain comment
      rest = trim(rest.substr(5));
      size_t i = 0;
      while (i < rest.size() && is_name_char(rest[i])) ++i;
      std::string name(rest.substr(0, i));
      if (name.empty() || !is_name_start(name[0])) {
        add_error("bad metric name in HELP/TYPE");
        continue;
      }
      std::string_view body = trim(rest.substr(i));
      if (is_help) {
        page.help[name] = unescape_help(body);
      } else {
        if (body != "counter" && body != "gauge" && body != "histogram" && body != "summary" && body != "untyped") {
          add_error("unknown TYPE '" + std::string(body.substr(0, 32)) + "'");
          continue;
        }
        page.types[name] = std::string(body);
      }
      continue;
    }
    std::string error;
    auto sample = parse_sample_line(t, &error);
    if (!sample) {
      add_error(error);
      continue;
    }
    page.samples.push_back(std::move(*sample));
  }
  return page;
}

}  // namespace gpuledger::device
