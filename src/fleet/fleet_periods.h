#pragma once
// The periods the fleet database rolls windows up to: UTC hours, days and
// calendar months (the same the database's window_totals count, migration 2),
// and how a report's range is cut into whole periods.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::fleet {

enum class Period { kHour = 0, kDay = 1, kMonth = 2 };
inline constexpr Period kPeriods[] = {Period::kHour, Period::kDay, Period::kMonth};

const char* to_string(Period p);       // "hour", "day", "month"
int64_t period_floor(int64_t t, Period p);  // the start of the period that holds t
int64_t period_next(int64_t start, Period p);  // the start of the one after
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
