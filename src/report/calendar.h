#pragma once
// Proleptic Gregorian dates in UTC, without a time zone or the C library's
// normalisation (which moves 2026-11-31 to 2026-12-01 instead of refusing it).
#include <cstdint>

namespace gpuledger::report {

struct CivilDate {
  int64_t year = 1970;
  int month = 1, day = 1;
};

// Days since 1970-01-01.
int64_t days_from_civil(int64_t year, int64_t month, int64_t day);
CivilDate civil_from_days(int64_t days);
int days_in_month(int64_t year, int month);  // 28..31; 0 for a month outside 1..12

}  // namespace gpuledger::report
