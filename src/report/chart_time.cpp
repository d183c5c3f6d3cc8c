#include "report/chart_time.h"

#include <algorithm>
#include <ctime>
#include <optional>

#include "report/report_text.h"

namespace gpuledger::report {

namespace {

constexpr int64_t kMinute = 60, kHour = 3600, kDay = 86400, kWeek = 7 * kDay;
// 1970-01-05, the first Monday after the epoch: weeks start on Mondays.
constexpr int64_t kFirstMonday = 4 * kDay;

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

std::tm utc(int64_t t) {
  std::tm tm{};
  const std::time_t tt = static_cast<std::time_t>(t);
  gmtime_r(&tt, &tm);
  return tm;
}

int64_t month_start(int64_t month_index) {  // months since 1970-01
  std::tm tm{};
  tm.tm_year = static_cast<int>(floor_div(month_index, 12)) + 70;
  tm.tm_mon = static_cast<int>(month_index - floor_div(month_index, 12) * 12);
  tm.tm_mday = 1;
  return static_cast<int64_t>(timegm(&tm));
}

int64_t month_index_of(int64_t t) {
  const std::tm tm = utc(t);
  return static_cast<int64_t>(tm.tm_year - 70) * 12 + tm.tm_mon;
}

// Ticks every `step` seconds on multiples of it from `origin`, in [from, to];
// nullopt when there would be more than `at_most` (counted, not listed).
std::optional<std::vector<int64_t>> fixed_ticks(int64_t from, int64_t to, int64_t step, int64_t origin,
                                                int64_t at_most) {
  const int64_t first = origin + ceil_div(from - origin, step) * step;
  if (first <= to && (to - first) / step + 1 > at_most) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t t = first; t <= to; t += step) out.push_back(t);
  return out;
}

// Ticks on the first of every `months`-th month (counted from 1970-01), in [from, to].
std::vector<int64_t> month_ticks(int64_t from, int64_t to, int64_t months) {
  std::vector<int64_t> out;
  int64_t m = ceil_div(month_index_of(from), months) * months;
  if (month_start(m) < from) m += months;
  for (; month_start(m) <= to; m += months) out.push_back(month_start(m));
  return out;
}

std::string plural(int64_t n, const char* unit) {
  return std::to_string(n) + " " + unit + (n == 1 ? "" : "s");
}

}  // namespace

int64_t chart_bucket_seconds(int64_t span, int64_t min_window, int64_t max_buckets) {
  static constexpr int64_t kRound[] = {1,         2,         5,         10,        15,        30,
                                       kMinute,   2 * kMinute, 5 * kMinute, 10 * kMinute, 15 * kMinute, 30 * kMinute,
                                       kHour,     2 * kHour, 3 * kHour, 6 * kHour, 12 * kHour, kDay,
                                       2 * kDay,  kWeek,     2 * kWeek, 4 * kWeek};
  const int64_t window = std::max<int64_t>(1, min_window);
  const int64_t need = std::max<int64_t>(1, ceil_div(std::max<int64_t>(1, span), std::max<int64_t>(1, max_buckets)));
  // Whole windows at least; a round length only where it is not much longer.
  const int64_t whole = ceil_div(std::max(need, window), window) * window;
  auto fits = [&](int64_t b) { return b >= need && b % window == 0 && b <= 2 * whole; };
  for (int64_t b : kRound)
    if (fits(b)) return b;
  for (int64_t b = ceil_div(need, 4 * kWeek) * 4 * kWeek; b <= 2 * whole; b += 4 * kWeek)
    if (fits(b)) return b;
  return whole;
}

std::string duration_words_short(int64_t s) {
  if (s > 0 && s % kDay == 0) return plural(s / kDay, "day");
  if (s > 0 && s % kHour == 0) return plural(s / kHour, "hour");
  if (s > 0 && s % kMinute == 0) return std::to_string(s / kMinute) + " min";
  return std::to_string(s) + " s";
}

std::vector<TimeTick> time_ticks(int64_t from, int64_t to, int max_ticks) {
  if (to < from) std::swap(from, to);
  max_ticks = std::max(2, max_ticks);
  static constexpr int64_t kSteps[] = {1,          2,          5,           10,          15,          30,
                                       kMinute,    2 * kMinute, 5 * kMinute, 10 * kMinute, 15 * kMinute, 30 * kMinute,
                                       kHour,      2 * kHour,  3 * kHour,   6 * kHour,   12 * kHour,  kDay,
                                       2 * kDay,   kWeek,      2 * kWeek};
  std::vector<int64_t> at;
  int64_t step = 0, months = 0;
  for (int64_t s : kSteps) {
    // Weeks start on Mondays; two weeks from the range's first Monday.
    const int64_t origin = s == kWeek        ? kFirstMonday
                           : s == 2 * kWeek ? kFirstMonday + ceil_div(from - kFirstMonday, kWeek) * kWeek
                                            : 0;
    if (auto ticks = fixed_ticks(from, to, s, origin, max_ticks)) {
      at = std::move(*ticks);
      step = s;
      break;
    }
  }
  if (step == 0) {
    for (int64_t m : {1, 2, 3, 6, 12, 24, 60, 120, 240, 600, 1200}) {
      at = month_ticks(from, to, m);
      months = m;
      if (static_cast<int>(at.size()) <= max_ticks) break;
    }
  }
  std::vector<TimeTick> out;
  int last_day = -1, last_year = -1;
  for (int64_t t : at) {
    const std::tm tm = utc(t);
    TimeTick tick{t, "", ""};
    if (months) {
      tick.label = format_utc(t, months >= 12 ? "%Y" : "%b");
      if (months < 12 && tm.tm_year != last_year) tick.context = format_utc(t, "%Y");
    } else if (step >= kDay) {
      tick.label = format_utc(t, "%b %d");
      if (tm.tm_year != last_year) tick.context = format_utc(t, "%Y");
    } else {
      tick.label = format_utc(t, step < kMinute ? "%H:%M:%S" : "%H:%M");
      if (tm.tm_yday != last_day || tm.tm_year != last_year) tick.context = format_utc(t, "%b %d");
    }
    last_day = tm.tm_yday;
    last_year = tm.tm_year;
    out.push_back(std::move(tick));
  }
  return out;
}

std::string bucket_range_text(int64_t start, int64_t seconds) {
  const int64_t end = start + seconds;
  const bool to_second = start % kMinute != 0 || seconds % kMinute != 0;
  const char* time = to_second ? "%H:%M:%S" : "%H:%M";
  const bool same_day = floor_div(start, kDay) == floor_div(end - 1, kDay) && end % kDay != 0;
  return format_utc(start, to_second ? "%Y-%m-%d %H:%M:%S" : "%Y-%m-%d %H:%M") + " to " +
         format_utc(end, same_day ? time : (to_second ? "%Y-%m-%d %H:%M:%S" : "%Y-%m-%d %H:%M")) + " UTC";
}

}  // namespace gpuledger::report
