#pragma once
// Part 1: what a probe adds to one CUDA call, measured in this process.
#include <cstddef>
#include <string>

namespace gpuledger::bench {

class SimLibrary;
class BenchCgroups;

struct ProbeOverheadOptions {
  int rounds = 5;
  size_t calls_per_round = 200000;
};

// Times the hot calls under every configuration, rounds interleaved, and
// returns the markdown section (heading, table, reading aids).
std::string measure_probe_overhead(const SimLibrary& lib, const BenchCgroups& cgroups,
                                   const ProbeOverheadOptions& options);

// Part 1t: a launch-bound tenant's launches per second - flat out, and paced
// at 100,000 a second with a little work each - with no agent, the billing
// probe set and the full one.
std::string measure_tenant_throughput(const SimLibrary& lib, const BenchCgroups& cgroups,
                                      const ProbeOverheadOptions& options);

// Part 1n: the same configurations on NVIDIA's real libcuda (a private copy
// of `real_libcuda`), whose calls fail fast without a GPU.
std::string measure_real_driver_overhead(const std::string& real_libcuda, const BenchCgroups& cgroups,
                                         const ProbeOverheadOptions& options);

// Part 1b: the same for CUDA runtime calls (the runtime stand-in at `cudart`,
// calling the driver copy in `lib`): the agent with --runtime-probes off, auto
// and on, against empty probes where auto/on put theirs.
std::string measure_runtime_overhead(const SimLibrary& lib, const BenchCgroups& cgroups, const std::string& cudart,
                                     const ProbeOverheadOptions& options);

}  // namespace gpuledger::bench
