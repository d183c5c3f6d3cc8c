#pragma once
// Time axes for the report's charts: a bucket length and ticks that fit any
// range, from a few seconds to months, so that no two ticks read the same and
// no bucket is named "0 min".
#include <cstdint>
#include <string>
#include <vector>

namespace gpuledger::report {

// The bucket length for "cost over time" over `span` seconds: the smallest
// round length (1, 2, 5, 10, 15, 30 s; 1, 2, 5, 10, 15, 30 min; 1, 2, 3, 6,
// 12 h; 1, 2, 7, 14, 28 days, then whole multiples of 28 days) that cuts the
// span into at most `max_buckets` and is a whole multiple of `min_window` (the
// shortest stored window, so that a window never straddles two buckets), and
// at most twice the smallest such multiple; else that multiple.
int64_t chart_bucket_seconds(int64_t span, int64_t min_window, int64_t max_buckets = 48);

// A length in words for a chart title: "10 s", "5 min", "1 hour", "6 hours",
// "1 day", "7 days"; "90 s", "150 min" where it is not a whole larger unit.
std::string duration_words_short(int64_t seconds);

struct TimeTick {
  int64_t t = 0;         // Unix seconds, inside [from, to]
  std::string label;     // UTC: "17:47:30", "17:47", "Dec 01", "Mar" or "2027"
  std::string context;   // a second line where the date (or year) changes: "Dec 01" or "2026"; else empty
};

// At most `max_ticks` ticks on round UTC times in [from, to] (every 1, 2, 5,
// 10, 15 or 30 s or min; 1, 2, 3, 6 or 12 h; 1 or 2 days; 1 or 2 weeks (from
// Mondays); 1, 2,
// 3, 6 or 12 months, or years), each label as precise as the spacing needs:
// seconds below a minute, the time below a day, the day, or the month. The
// first tick, and every tick on a new day (or year, for days and months), has
// the date (or year) as its context line, so no two ticks read the same.
std::vector<TimeTick> time_ticks(int64_t from, int64_t to, int max_ticks);

// The time a bucket covers, for a tooltip: "2026-11-30 14:05:10 to 14:05:20 UTC".
std::string bucket_range_text(int64_t start, int64_t seconds);

}  // namespace gpuledger::report
