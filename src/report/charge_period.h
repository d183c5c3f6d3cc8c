#pragma once
// Charge periods: the hour, UTC day or UTC calendar month a bill's rows are cut
// into (`report --granularity hour|day|month`, FOCUS ChargePeriodStart/End).
// A period is [start, end): the end is exclusive, as FOCUS requires.
#include <cstdint>
#include <string>
#include <vector>

namespace gpuledger::report {

enum class Granularity { kHour, kDay, kMonth };
// "hour", "day", "month"; throws Error otherwise.
Granularity parse_granularity(const std::string& text);
std::string to_string(Granularity g);

// The start of the period holding `t`, and the start of the next one.
int64_t period_start(int64_t t, Granularity g);
int64_t period_end(int64_t t, Granularity g);

// The periods that cover [from, to), each clipped to the range.
std::vector<std::pair<int64_t, int64_t>> charge_periods(int64_t from, int64_t to, Granularity g);

}  // namespace gpuledger::report
