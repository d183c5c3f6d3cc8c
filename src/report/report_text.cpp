#include "report/report_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>
#include <ctime>
#include <sstream>

#include "common/inert_text.h"
#include "common/utf8.h"
#include "ledger/prices.h"
#include "common/micros_text.h"

namespace gpuledger::report {

std::string fixed(double v, int decimals) {
  // std::to_chars is printf's "%.*f" (the C standard's exact rounding) at a
  // fraction of its cost: a fleet's FOCUS export formats millions of them.
  char buf[64];
  if (std::isfinite(v) && decimals >= 0) {
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    if (ec == std::errc()) return std::string(buf, end);
  }
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string money(int64_t micros) { return format_micros(micros); }

std::string money_cents(int64_t micros) {
  const bool negative = micros < 0;
  const uint64_t abs = negative ? 0 - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros);
  const uint64_t cents = (abs + 5'000) / 10'000;
  const std::string digits = std::to_string(cents / 100);
  std::string whole;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) whole += ',';
    whole += digits[i];
  }
  char frac[4];
  std::snprintf(frac, sizeof frac, "%02u", static_cast<unsigned>(cents % 100));
  return (negative && cents ? "-" : "") + whole + "." + frac;
}

std::string pct(const std::optional<double>& v) { return v ? fixed(*v * 100.0, 1) + "%" : "unknown"; }

std::string energy_kwh(const std::optional<int64_t>& millijoules, int decimals, const std::string& unknown_text) {
  return millijoules ? fixed(static_cast<double>(*millijoules) / 3.6e9, decimals) : unknown_text;
}

std::string carbon_kg(const std::optional<double>& grams, int decimals, const std::string& unknown_text) {
  return grams ? fixed(*grams / 1000.0, decimals) : unknown_text;
}

std::string display_name(const std::string& name) { return inert_text(name); }

std::string html_escape(const std::string& raw) {
  const std::string s = inert_text(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_utc(int64_t unix_seconds, const char* strftime_format) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, strftime_format, &tm);
  return buf;
}

std::string format_date_time(int64_t unix_seconds) { return format_utc(unix_seconds, "%Y-%m-%d %H:%M UTC"); }

// Aligned columns: the first left-aligned, the others right-aligned; a rule
// before the last line when `rule_before_last`.
std::string aligned_columns(const std::vector<std::vector<std::string>>& lines, bool rule_before_last) {
  std::vector<size_t> width(lines.front().size(), 0);
  for (const auto& l : lines)
    for (size_t i = 0; i < l.size(); ++i) width[i] = std::max(width[i], l[i].size());
  std::ostringstream out;
  for (size_t n = 0; n < lines.size(); ++n) {
    const auto& l = lines[n];
    if (rule_before_last && n + 1 == lines.size()) {
      size_t total_width = 0;
      for (size_t w : width) total_width += w;
      out << std::string(total_width + 2 * (width.size() - 1), '-') << "\n";
    }
    std::string line;
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) line += "  ";
      if (i == 0)
        line += l[i] + std::string(width[i] - l[i].size(), ' ');
      else
        line += std::string(width[i] - l[i].size(), ' ') + l[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  return out.str();
}

std::string csv_field(const std::string& raw) {
  const std::string s = valid_utf8(raw);
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out;
  append_csv_field(out, s, true);
  return out;
}

// Written through a pointer into room for the worst case (every byte a
// quote): a FOCUS row's JSON cells are quoted, ~700 bytes a row with a quote
// every ~7, and a push_back a byte was the largest share of a fleet's FOCUS
// export (docs/performance.md: 0.65x the time a row).
void append_csv_field(std::string& out, std::string_view valid, bool quote) {
  if (!quote) {
    out += valid;
    return;
  }
  const size_t at = out.size();
  out.resize(at + 2 * valid.size() + 2);
  char* p = out.data() + at;
  *p++ = '"';
  for (const char c : valid) {
    *p = '"';
    p += c == '"';  // doubled: the quote above stays
    *p++ = c;
  }
  *p++ = '"';
  out.resize(static_cast<size_t>(p - out.data()));
}

}  // namespace gpuledger::report
