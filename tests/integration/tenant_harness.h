#pragma once
// Test support for the integration tests: one agent for the suite, tenants in
// pod-shaped cgroups running the workload generator, and polls with deadlines.
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "attribution/attribution_plane.h"
#include "identity/cgroup_fs.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {

inline const std::string kSimLib = GPULEDGER_SIM_LIB;
inline const std::string kCudasim = GPULEDGER_CUDASIM;

// A cgroup path unique to this test run, under a parent removed at the end.
std::string test_cgroup(const std::string& relative);

const identity::CgroupMounts& mounts();

struct TenantResult {
  int exit_code = -1;
  nlohmann::json truth;  // what the generator says it did
};

// Runs the generator to completion inside the given cgroup directories.
TenantResult run_tenant(const std::vector<std::string>& cgroup_dirs, const std::string& script,
                        const std::vector<std::string>& env = {}, const std::vector<std::string>& args = {});

// Starts the generator; the script is expected to `print-ready` then `wait-stdin`.
std::unique_ptr<simulation::Child> start_interactive_tenant(const std::vector<std::string>& cgroup_dirs,
                                                            const std::string& script,
                                                            const std::vector<std::string>& env = {});
// Reads the generator's stdout up to its READY line.
void await_ready(simulation::Child& child);
nlohmann::json finish_interactive_tenant(simulation::Child& child);

// Polls `condition` every 5 ms until it holds or the deadline passes.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds deadline = std::chrono::milliseconds(3000));

// The view of one workload in a snapshot, or nullptr.
const attribution::WorkloadView* find_workload(const attribution::AttributionSnapshot& snap, const std::string& id);

}  // namespace gpuledger::testing
