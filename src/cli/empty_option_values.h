#pragma once
// CLI11 (2.1) reads `--opt=` as `--opt` and then takes the next argument as
// its value, so `--store= --no-discovery` stored the ledger in a file named
// "--no-discovery". Written this way the value is meant to be empty: the
// argument is split into `--opt` and "", which CLI11 reads as an empty value
// (and an option that refuses one says so).
#include <string>
#include <vector>

namespace gpuledger::cli {

// argv with every long option written `--name=` (nothing after the first
// '=') split in two; nothing after a bare `--` is touched.
std::vector<std::string> split_empty_option_values(int argc, const char* const* argv);

}  // namespace gpuledger::cli
