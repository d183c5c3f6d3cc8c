#pragma once
// The times a report's range is given in (--from, --to, --month), read
// strictly: an impossible date is refused, never moved to another day.
#include <cstdint>
#include <string>
#include <utility>

namespace gpuledger::report {

// "now", relative "-24h" / "-30m" / "-7d" / "-90s" (from now), RFC 3339
// ("2026-11-29T10:00:00Z", "...+02:00", fractional seconds dropped), a plain
// date ("2026-11-01": its midnight, UTC) or Unix seconds. Throws Error otherwise.
int64_t parse_time(const std::string& text, int64_t now);
// "2026-11" -> [2026-11-01T00:00:00Z, 2026-12-01T00:00:00Z). Throws Error otherwise.
std::pair<int64_t, int64_t> parse_month(const std::string& text);
std::string format_rfc3339(int64_t unix_seconds);  // UTC, "Z"

}  // namespace gpuledger::report
