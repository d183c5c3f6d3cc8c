#include "probes/runtime_discovery.h"

#include <fstream>
#include <set>

namespace gpuledger::probes {
namespace {

bool is_driver_library(const std::string& path) {
  auto slash = path.rfind('/');
  return path.compare(slash == std::string::npos ? 0 : slash + 1, 10, "libcuda.so") == 0;
}

}  // namespace

std::vector<LibraryCandidate> runtime_candidates(const std::string& proc, uint32_t pid, const std::string& origin) {
  std::vector<LibraryCandidate> out;
  std::set<std::string> seen;
  std::ifstream maps(proc + "/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.ends_with(" (deleted)") || is_driver_library(path) || !seen.insert(path).second) continue;
    out.push_back(candidate_in_process(proc, pid, path, origin));
  }
  return out;
}

std::vector<LibraryCandidate> scan_runtime_candidates(const std::string& proc) {
  std::vector<LibraryCandidate> out;
  std::set<uint32_t> pids;
  for (const auto& driver : scan_process_maps(proc)) {
    if (!pids.insert(driver.pid).second) continue;
    auto found = runtime_candidates(proc, driver.pid, "maps");
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace gpuledger::probes
