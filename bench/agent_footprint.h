#pragma once
// Parts 2 and 3: the agent as a separate process -- its CPU under a tenant
// launching flat out, and its memory with many workloads.
#include <string>

namespace gpuledger::bench {

class SimLibrary;
class BenchCgroups;

// Returns the markdown section.
std::string measure_agent_cpu(const SimLibrary& lib, const BenchCgroups& cgroups, const std::string& agent_binary,
                              int seconds);
std::string measure_agent_memory(const SimLibrary& lib, const BenchCgroups& cgroups,
                                 const std::string& agent_binary, int workloads);

}  // namespace gpuledger::bench
