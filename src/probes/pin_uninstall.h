#pragma once
// Removing the pinned data plane from a node: what `gpuledger uninstall` does,
// and what an agent does when it stops for good (without --keep-pins-on-exit,
// or knowing it is the last one). Once the pins are gone and no agent holds
// the links, the kernel detaches every probe: a CUDA call costs what it cost
// before gpuledger ran.
#include <cstddef>
#include <string>

namespace gpuledger::probes {

struct PinsRemoved {
  bool found = false;          // there was a pin directory at all
  size_t pins = 0;             // pins removed
  size_t continued = 0;        // held processes a stopped agent left stopped, continued
};
// Removes everything under the pin directory `dir` (--bpf-pin-dir). Refuses -
// throws PinsHeld - while an agent holds any plane's lock, and Error for a
// directory that is not on bpffs: only bpffs is ever emptied. A `dir` that does
// not exist is nothing to do (found false).
PinsRemoved remove_pinned_data_plane(const std::string& dir);

}  // namespace gpuledger::probes
