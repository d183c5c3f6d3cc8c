// `gpuledger uninstall`: removes what an agent kept on the node on purpose -
// the data plane pinned in bpffs (probes, counters, contexts) that an agent
// stopped with --keep-pins-on-exit, or killed, leaves for its successor.
#include <cstdio>
#include <optional>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "probes/pin_store.h"
#include "probes/pin_uninstall.h"

namespace gpuledger::cli {


int run_uninstall(const UninstallCommand& cmd) {
  const std::string dir = cmd.bpf_pin_dir.empty() ? probes::default_pin_dir(false) : cmd.bpf_pin_dir;
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

Subcommand add_uninstall_command(CLI::App& app) {
  auto o = std::make_shared<UninstallCommand>();
  CLI::App* cmd = app.add_subcommand("uninstall", "Remove the data plane a stopped agent left pinned in bpffs");
  cmd->footer(
      "Removes what a stopped agent left on the node for its successor: its data plane pinned in bpffs (the "
      "probes, which trap every CUDA call while no agent runs, and the in-kernel counters, contexts and live "
      "allocations). An agent stopped without --keep-pins-on-exit removes them itself; run this after one "
      "killed or kept them, not between restarts or upgrades: the next agent takes the pins over. Refuses while "
      "an agent holds them; does nothing when nothing is pinned. The ledger store is left alone.");
  cmd->add_option("--bpf-pin-dir", o->bpf_pin_dir,
                            "The agent's --bpf-pin-dir (default: <bpffs>/gpuledger)");

  return {cmd, [o] { return run_uninstall(*o); }};
}

}  // namespace gpuledger::cli
