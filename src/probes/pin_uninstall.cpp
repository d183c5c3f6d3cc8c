#include "probes/pin_uninstall.h"

#include <filesystem>
#include <vector>

#include "common/unique_fd.h"
#include "probes/library_discovery.h"
#include "probes/pin_store.h"

namespace gpuledger::probes {

PinsRemoved remove_pinned_data_plane(const std::string& dir) {
  PinsRemoved out;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::exists(dir, ec)) return out;
  out.found = true;
  // Refuses a directory not on bpffs, and one an agent holds (each plane's
  // directory is locked by the agent using it): its pins would be gone while
  // it runs. The locks are held until everything is removed.
  std::vector<UniqueFd> locks;
  locks.push_back(lock_pin_dir(dir));
  for (const auto& plane : std::filesystem::directory_iterator(dir, ec))
    if (plane.is_directory(ec)) locks.push_back(lock_pin_dir(plane.path()));
  // A process an agent stopped (first-call hold) and died before continuing
  // must not stay stopped once the map that names it is gone.
  out.continued = continue_pinned_held(held_processes_pin_path(dir));
  out.pins = remove_pin_tree(dir);
  return out;
}

}  // namespace gpuledger::probes
