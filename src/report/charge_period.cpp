#include "report/charge_period.h"

#include <algorithm>

#include "common/error.h"
#include "report/calendar.h"

namespace gpuledger::report {

Granularity parse_granularity(const std::string& t) {
  if (t == "hour") return Granularity::kHour;
  if (t == "day") return Granularity::kDay;
  if (t == "month") return Granularity::kMonth;
  throw Error("--granularity '" + t + "': expected hour, day or month");
}

std::string to_string(Granularity g) {
  switch (g) {
    case Granularity::kHour: return "hour";
    case Granularity::kDay: return "day";
    case Granularity::kMonth: return "month";
  }
  return "?";
}

namespace {
int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
}  // namespace

int64_t period_start(int64_t t, Granularity g) {
  switch (g) {
    case Granularity::kHour: return floor_div(t, 3600) * 3600;
    case Granularity::kDay: return floor_div(t, 86400) * 86400;
    case Granularity::kMonth: {
      const CivilDate d = civil_from_days(floor_div(t, 86400));
      return days_from_civil(d.year, d.month, 1) * 86400;
    }
  }
  return t;
}

int64_t period_end(int64_t t, Granularity g) {
  switch (g) {
    case Granularity::kHour: return period_start(t, g) + 3600;
    case Granularity::kDay: return period_start(t, g) + 86400;
    case Granularity::kMonth: {
      const CivilDate d = civil_from_days(floor_div(t, 86400));
      return (d.month == 12 ? days_from_civil(d.year + 1, 1, 1) : days_from_civil(d.year, d.month + 1, 1)) * 86400;
    }
  }
  return t;
}

std::vector<std::pair<int64_t, int64_t>> charge_periods(int64_t from, int64_t to, Granularity g) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t t = from; t < to;) {
    const int64_t end = std::min(to, period_end(t, g));
    out.emplace_back(t, end);
    t = end;
  }
  return out;
}

}  // namespace gpuledger::report
