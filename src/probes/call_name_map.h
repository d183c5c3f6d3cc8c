#pragma once
// The call_names BPF map (cuda_probes.h): each call id's name, kept beside
// the counters and links whose keys and cookies carry the ids. An agent that
// takes over pinned maps and links must name ids as the agent that handed
// them out did - which depends on the order files were planned in, not only
// on the files - or errors would be named after the wrong entry point.
#include <cstdint>
#include <map>
#include <string>

#include "probes/cuda_entry_points.h"

namespace gpuledger::probes {

std::map<uint32_t, std::string> read_call_names(int map_fd);
// Makes `names` keep its ids in the map: restores what is there, records
// what it assigns later. A map that cannot be read or written degrades to
// names of this agent's own (logged).
void keep_call_names_in(CallNames& names, int map_fd);

}  // namespace gpuledger::probes
