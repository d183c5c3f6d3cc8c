// `gpuledger uninstall`: removes what the agent leaves on a node on purpose -
// the data plane pinned in bpffs (probes, counters, contexts), which a
// stopped or upgraded agent keeps so that nothing is lost in between.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include "cli/commands.h"
#include "common/error.h"
#include "common/log.h"
#include "probes/library_discovery.h"
#include "probes/pin_store.h"

namespace gpuledger::cli {

std::string default_bpf_pin_dir(bool may_mount) {
  auto bpffs = may_mount ? std::optional(probes::find_or_mount_bpffs()) : probes::find_bpffs();
  return bpffs ? *bpffs + "/gpuledger" : "";
}

int run_uninstall(const UninstallCommand& cmd) {
  const std::string dir = cmd.bpf_pin_dir.empty() ? default_bpf_pin_dir(false) : cmd.bpf_pin_dir;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::exists(dir, ec)) {
    std::printf("nothing pinned%s%s\n", dir.empty() ? " (no bpffs is mounted)" : " in ", dir.c_str());
    return 0;
  }
  size_t pins = 0;
  {
    // Refuses a directory not on bpffs, and one an agent holds (each plane's
    // directory is locked by the agent using it): its pins would be gone
    // while it runs.
    std::vector<UniqueFd> locks;
    locks.push_back(probes::lock_pin_dir(dir));
    for (const auto& plane : std::filesystem::directory_iterator(dir, ec))
      if (plane.is_directory(ec)) locks.push_back(probes::lock_pin_dir(plane.path()));
    // A process an agent stopped (first-call hold) and died before continuing
    // must not stay stopped once the map that names it is gone.
    if (size_t n = probes::continue_pinned_held(probes::held_processes_pin_path(dir)))
      std::printf("continued %zu process(es) a stopped agent had held for a new libcuda\n", n);
    pins = probes::remove_pin_tree(dir);
  }
  std::printf("removed %zu BPF pins under %s: the probes are detached and the in-kernel counters freed\n", pins,
              dir.c_str());
  return 0;
}

}  // namespace gpuledger::cli
