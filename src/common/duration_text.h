#pragma once
// Durations on the command line as operators write them elsewhere
// (Prometheus, kubectl): "90s", "10m", "1h", "250ms", or a bare number of
// seconds. Throws Error on anything else.
#include <chrono>
#include <cstdint>
#include <string>

namespace gpuledger {

std::chrono::milliseconds parse_duration(const std::string& text);

// A span of seconds for people, in its two largest units: 960 -> "16m",
// 273600 -> "3d 4h", 1796192715 -> "20789d 6h", 90 -> "1m 30s" (a number of
// seconds that long says nothing at a glance).
std::string duration_words(int64_t seconds);

}  // namespace gpuledger
