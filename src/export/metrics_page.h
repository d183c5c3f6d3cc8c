#pragma once
// The /metrics page: every workload's counters under the contract names, and
// the agent's own health.
#include <string>

#include "agent/snapshot.h"

namespace gpuledger::exporter {

// `last_scrape_seconds` is how long the previous scrape took to produce.
std::string render_metrics(const agent::AgentSnapshot& snapshot, double last_scrape_seconds);

}  // namespace gpuledger::exporter
