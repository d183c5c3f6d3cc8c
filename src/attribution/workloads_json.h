#pragma once
// The /api/v1/workloads document: per workload its identity, cgroup paths,
// live processes and every counter; plus the libraries the agent covers.
#include <nlohmann/json.hpp>

#include "attribution/snapshot.h"

namespace gpuledger::attribution {

nlohmann::json workloads_json(const attribution::AttributionSnapshot& snapshot);

}  // namespace gpuledger::attribution
