#pragma once
// Durations on the command line as operators write them elsewhere
// (Prometheus, kubectl): "90s", "10m", "1h", "250ms", or a bare number of
// seconds. Throws Error on anything else.
#include <chrono>
#include <string>

namespace gpuledger {

std::chrono::milliseconds parse_duration(const std::string& text);

}  // namespace gpuledger
