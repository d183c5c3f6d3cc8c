#pragma once
// The periods the fleet database rolls windows up to: the UTC hours, days and
// calendar months of the bill's charge periods (report/charge_period.h, the
// same the database's window_totals count, migration 2), and how a report's
// range is cut into whole periods.
#include <cstdint>
#include <optional>
#include <vector>

#include "report/charge_period.h"

namespace gpuledger::fleet {

using Period = report::Granularity;  // report::period_start / period_end / to_string
inline constexpr Period kPeriods[] = {Period::kHour, Period::kDay, Period::kMonth};

// The next finer period; nullopt below an hour (the windows themselves).
std::optional<Period> finer(Period p);

// A piece of a report's range: a whole period, or (no period) a stretch
// shorter than an hour at either end of it, read as windows.
struct RangePiece {
  std::optional<Period> period;
  int64_t start = 0, end = 0;
};
// [from, to) as the fewest pieces no coarser than `coarsest` (nullopt: windows only).
std::vector<RangePiece> cut_range(int64_t from, int64_t to, std::optional<Period> coarsest);

}  // namespace gpuledger::fleet
