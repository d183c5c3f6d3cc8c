#include "probes/runtime_discovery.h"

#include <filesystem>
#include <map>

namespace gpuledger::probes {

std::vector<LibraryCandidate> runtime_candidates(const std::string& proc, uint32_t pid, const std::string& origin) {
  std::vector<LibraryCandidate> out;
  for (auto& m : exec_mappings(proc, pid)) {
    if (is_cuda_library_name(m.path)) continue;
    out.push_back(LibraryCandidate{pid, std::move(m), origin, std::nullopt});
  }
  return out;
}

std::vector<LibraryCandidate> scan_runtime_candidates(const std::string& proc, const std::set<FileId>& drivers) {
  return runtime_candidates_among(scan_process_maps(proc), drivers);
}

std::vector<LibraryCandidate> runtime_candidates_among(std::vector<LibraryCandidate> scanned,
                                                       const std::set<FileId>& drivers) {
  std::map<uint32_t, std::vector<LibraryCandidate>> by_pid;
  for (auto& c : scanned) by_pid[c.pid].push_back(std::move(c));
  std::vector<LibraryCandidate> out;
  for (auto& [pid, mappings] : by_pid) {
    bool uses_driver = false;
    for (const auto& c : mappings)
      uses_driver = uses_driver || is_cuda_library_name(c.mapping.path) || drivers.contains(c.mapping.printed);
    if (!uses_driver) continue;
    for (auto& c : mappings) {
      if (is_cuda_library_name(c.mapping.path) || drivers.contains(c.mapping.printed)) continue;
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace gpuledger::probes
