#include "fleet/fleet_periods.h"

#include "fleet/fleet_schema.h"

namespace gpuledger::fleet {

const char* to_string(Period p) {
  switch (p) {
    case Period::kHour: return "hour";
    case Period::kDay: return "day";
    case Period::kMonth: return "month";
  }
  return "hour";
}

namespace {
int64_t floor_to(int64_t t, int64_t unit) { return t - ((t % unit) + unit) % unit; }
}  // namespace

int64_t period_floor(int64_t t, Period p) {
  switch (p) {
    case Period::kHour: return floor_to(t, 3600);
    case Period::kDay: return floor_to(t, 86400);
    case Period::kMonth: return month_start(t);
  }
  return t;
}

int64_t period_next(int64_t start, Period p) {
  switch (p) {
    case Period::kHour: return start + 3600;
    case Period::kDay: return start + 86400;
    case Period::kMonth: return month_start(month_start(start) + 32 * 86400);
  }
  return start;
}

std::optional<Period> finer(Period p) {
  if (p == Period::kMonth) return Period::kDay;
  if (p == Period::kDay) return Period::kHour;
  return std::nullopt;
}

std::vector<RangePiece> cut_range(int64_t from, int64_t to, std::optional<Period> coarsest) {
  std::vector<RangePiece> out;
  for (int64_t t = from; t < to;) {
    bool whole = false;
    for (std::optional<Period> p = coarsest; p; p = finer(*p)) {
      if (period_floor(t, *p) == t && period_next(t, *p) <= to) {
        out.push_back({p, t, period_next(t, *p)});
        t = period_next(t, *p);
        whole = true;
        break;
      }
    }
    if (whole) continue;
    // Windows up to the next hour (or the range's end): the range's ragged ends.
    const int64_t end = coarsest ? std::min(to, period_floor(t, Period::kHour) + 3600) : to;
    if (!out.empty() && !out.back().period && out.back().end == t)
      out.back().end = end;
    else
      out.push_back({std::nullopt, t, end});
    t = end;
  }
  return out;
}

}  // namespace gpuledger::fleet
