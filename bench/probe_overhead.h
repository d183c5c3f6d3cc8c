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

}  // namespace gpuledger::bench
