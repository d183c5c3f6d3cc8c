#include "fleet/fleet_periods.h"

#include <algorithm>

namespace gpuledger::fleet {

std::optional<Period> finer(Period p) {
  if (p == Period::kMonth) return Period::kDay;
  if (p == Period::kDay) return Period::kHour;
  return std::nullopt;
}

std::vector<RangePiece> cut_range(int64_t from, int64_t to, std::optional<Period> coarsest) {
  using report::period_end;
  using report::period_start;
  std::vector<RangePiece> out;
  for (int64_t t = from; t < to;) {
    bool whole = false;
    for (std::optional<Period> p = coarsest; p; p = finer(*p)) {
      if (period_start(t, *p) == t && period_end(t, *p) <= to) {
        out.push_back({p, t, period_end(t, *p)});
        t = period_end(t, *p);
        whole = true;
        break;
      }
    }
    if (whole) continue;
    // Windows up to the next hour (or the range's end): the range's ragged ends.
    const int64_t end = coarsest ? std::min(to, period_end(t, Period::kHour)) : to;
    if (!out.empty() && !out.back().period && out.back().end == t)
      out.back().end = end;
    else
      out.push_back({std::nullopt, t, end});
    t = end;
  }
  return out;
}

}  // namespace gpuledger::fleet
