#pragma once
// What becomes of the pinned data plane when `gpuledger agent` stops
// (SIGTERM, SIGINT). Without --keep-pins-on-exit the agent removes it: nothing
// of gpuledger stays attached to a node it no longer runs on. With it, the pins
// stay for the next agent (a restart, an upgrade), except where the agent can
// tell that there will be none: in Kubernetes, when its DaemonSet is deleted,
// being deleted or no longer selects the node (kubernetes/own_daemonset.h).
// A SIGKILL or an OOM kill never gets here: the pins stay, for the next agent
// or `gpuledger uninstall`.
#include <optional>
#include <string>

#include "kubernetes/cluster_config.h"
#include "node/node_options.h"

namespace gpuledger::node {

struct PinsOnExit {
  bool remove = false;
  std::string why;  // for the log
};

// Decided while the agent still runs (the API server is asked then).
PinsOnExit decide_pins_on_exit(const NodeOptions& cmd, const std::optional<kubernetes::ClusterConfig>& cluster);
// Carried out once the agent is gone: no probe descriptor is open and no
// plane's lock is held any more, so removing the pins detaches the probes.
void apply_pins_on_exit(const PinsOnExit& plan, const std::string& pin_dir);

}  // namespace gpuledger::node
