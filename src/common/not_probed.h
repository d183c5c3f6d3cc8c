#pragma once
// The words every view uses where a count only hot-path probes feed would be,
// under the billing probe set (probes/probe_sets.h): such counts are absent,
// never shown as 0. One home, for the agent's pages and the reports alike.
#include <string_view>

namespace gpuledger {

inline constexpr std::string_view kNotProbedByBilling = "not probed (probe set billing)";

}  // namespace gpuledger
