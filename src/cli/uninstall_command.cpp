// `gpuledger uninstall`: removes what an agent kept on the node on purpose -
// the data plane pinned in bpffs (probes, counters, contexts) that an agent
// stopped with --keep-pins-on-exit, or killed, leaves for its successor.
#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "probes/pin_store.h"
#include "probes/pin_uninstall.h"

namespace gpuledger::cli {

std::string default_bpf_pin_dir(bool may_mount) {
  auto bpffs = may_mount ? std::optional(probes::find_or_mount_bpffs()) : probes::find_bpffs();
  return bpffs ? *bpffs + "/gpuledger" : "";
}

int run_uninstall(const UninstallCommand& cmd) {
  const std::string dir = cmd.bpf_pin_dir.empty() ? default_bpf_pin_dir(false) : cmd.bpf_pin_dir;
  const probes::PinsRemoved removed = probes::remove_pinned_data_plane(dir);
  if (!removed.found) {
    std::printf("nothing pinned%s%s\n", dir.empty() ? " (no bpffs is mounted)" : " in ", dir.c_str());
    return 0;
  }
  if (removed.continued)
    std::printf("continued %zu process(es) a stopped agent had held for a new libcuda\n", removed.continued);
  std::printf("removed %zu BPF pins under %s: the probes are detached and the in-kernel counters freed\n",
              removed.pins, dir.c_str());
  return 0;
}

}  // namespace gpuledger::cli
