#include "report/report_time.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>

#include "common/error.h"
#include "report/calendar.h"
#include "report/report_text.h"

namespace gpuledger::report {

namespace {

// Digits only, no sign, fitting in int64: refused otherwise (never a stoll message).
std::optional<int64_t> parse_count(const std::string& digits) {
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (unsigned char c : digits) {
    if (!std::isdigit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool valid_date(int y, int mo, int d) { return mo >= 1 && mo <= 12 && d >= 1 && d <= days_in_month(y, mo); }

}  // namespace

std::pair<int64_t, int64_t> parse_month(const std::string& text) {
  int y = 0, m = 0, consumed = 0;
  if (text.size() != 7 || std::sscanf(text.c_str(), "%4d-%2d%n", &y, &m, &consumed) != 2 || consumed != 7 || m < 1 ||
      m > 12 || text[4] != '-' || !std::isdigit(static_cast<unsigned char>(text[0])) ||
      !std::isdigit(static_cast<unsigned char>(text[5])))
    throw Error("--month '" + text + "': expected a year and month, e.g. 2026-11");
  const int64_t start = days_from_civil(y, m, 1) * 86400;
  const int64_t end = m == 12 ? days_from_civil(y + 1, 1, 1) * 86400 : days_from_civil(y, m + 1, 1) * 86400;
  return {start, end};
}

int64_t parse_time(const std::string& text, int64_t now) {
  auto bad = [&]() -> Error {
    return Error("time '" + text +
                 "': expected now, -<n>s|m|h|d, a date (2026-11-01), RFC 3339 (2026-11-29T10:00:00Z) or Unix seconds");
  };
  auto impossible = [&]() -> Error { return Error("time '" + text + "': no such date or time of day"); };
  if (text == "now") return now;
  if (text.size() >= 3 && text[0] == '-' && std::isdigit(static_cast<unsigned char>(text[1]))) {
    const auto n = parse_count(text.substr(1, text.size() - 2));
    const char unit = text.back();
    const int64_t mult = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
    if (!n || !mult || *n > 100'000LL * 366 * 86400 / mult) throw bad();  // at most 100,000 years back
    return now - *n * mult;
  }
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const auto v = parse_count(text);
    if (!v) throw bad();
    return *v;
  }
  auto all_digits = [&](size_t from, size_t n) {
    return text.size() >= from + n &&
           std::all_of(text.begin() + from, text.begin() + from + n, [](unsigned char c) { return std::isdigit(c); });
  };
  {
    int y, mo, d, consumed = 0;
    if (text.size() == 10 && std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &consumed) == 3 &&
        consumed == 10) {
      if (!all_digits(0, 4) || !all_digits(5, 2) || !all_digits(8, 2)) throw bad();
      if (!valid_date(y, mo, d)) throw impossible();
      return days_from_civil(y, mo, d) * 86400;
    }
  }
  int y, mo, d, h, mi, s;
  char t;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &t, &h, &mi, &s, &consumed) != 7 ||
      (t != 'T' && t != 't' && t != ' ') || consumed != 19 || !all_digits(0, 4) || !all_digits(5, 2) ||
      !all_digits(8, 2) || !all_digits(11, 2) || !all_digits(14, 2) || !all_digits(17, 2))
    throw bad();
  if (!valid_date(y, mo, d) || h > 23 || mi > 59 || s > 60) throw impossible();
  std::string rest = text.substr(consumed);
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    if (i == 1) throw bad();
    rest = rest.substr(i);
  }
  int64_t offset = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
             std::all_of(rest.begin() + 1, rest.begin() + 3, is_digit) && std::all_of(rest.begin() + 4, rest.end(), is_digit)) {
    const int oh = std::stoi(rest.substr(1, 2)), om = std::stoi(rest.substr(4, 2));
    if (oh > 23 || om > 59) throw impossible();
    offset = (oh * 3600 + om * 60) * (rest[0] == '+' ? 1 : -1);
  } else {
    throw bad();
  }
  // A leap second (:60) is the next second's start, as POSIX time counts it.
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset;
}

std::string format_rfc3339(int64_t unix_seconds) { return format_utc(unix_seconds, "%Y-%m-%dT%H:%M:%SZ"); }

}  // namespace gpuledger::report
