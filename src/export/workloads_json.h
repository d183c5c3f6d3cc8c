#pragma once
// The /api/v1/workloads document: per workload its identity, cgroup paths,
// live processes and every counter; plus the libraries the agent covers.
#include <nlohmann/json.hpp>

#include "agent/snapshot.h"

namespace gpuledger::exporter {

nlohmann::json workloads_json(const agent::AgentSnapshot& snapshot);

}  // namespace gpuledger::exporter
