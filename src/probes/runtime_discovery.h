#pragma once
// Where CUDA runtimes live: in the processes that use the driver. A process
// that calls the runtime has libcuda mapped (the runtime dlopens it), so the
// files those processes map - their executable (a statically linked runtime)
// and their libraries (libcudart.so.*, a renamed or bundled copy) - are the
// candidates; RuntimeAttacher keeps those whose symbols name runtime entry
// points. Each is opened as the driver's are: the mapped inode, verified.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "probes/library_discovery.h"

namespace gpuledger::probes {

// The files process `pid` maps for execution (its executable first), the
// driver library itself left out.
std::vector<LibraryCandidate> runtime_candidates(const std::string& proc, uint32_t pid, const std::string& origin);

// runtime_candidates of every process that maps the driver: a file named like
// libcuda, or one of `drivers` (the attached driver files, by inode).
std::vector<LibraryCandidate> scan_runtime_candidates(const std::string& proc, const std::set<FileId>& drivers);
// The same among the mappings of a scan already made (scan_process_maps): the
// backstop reads every process's maps once for the driver and the runtime.
std::vector<LibraryCandidate> runtime_candidates_among(std::vector<LibraryCandidate> scanned,
                                                       const std::set<FileId>& drivers);

}  // namespace gpuledger::probes
