#pragma once
// A CUDA runtime linked statically into a program and then stripped keeps no
// symbol table, so its entry points cannot be found and probed. It still
// carries the runtime's table of error names; finding one of them tells
// "a stripped runtime is here, its calls are not probed" apart from "no
// runtime here", so the agent can say so instead of staying silent.
#include <cstddef>

namespace gpuledger::probes {

// Whether the file behind `fd` holds the CUDA runtime's error-name table.
// Reads at most `limit` bytes (the file is a tenant's: a bound on the work it
// can make the agent do), in chunks, with pread (the descriptor's offset is
// left alone).
bool holds_cuda_runtime_strings(int fd, size_t limit = size_t{256} << 20);

}  // namespace gpuledger::probes
