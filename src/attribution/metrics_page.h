#pragma once
// The /metrics page: every workload's counters under the contract names, and
// the agent's own health.
#include <string>

#include "attribution/snapshot.h"

namespace gpuledger::attribution {

// `last_scrape_seconds` is how long the previous scrape took to produce.
std::string render_metrics(const attribution::AttributionSnapshot& snapshot, double last_scrape_seconds);

}  // namespace gpuledger::attribution
