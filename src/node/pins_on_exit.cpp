#include "node/pins_on_exit.h"

#include <cstdlib>

#include "common/error.h"
#include "common/log.h"
#include "kubernetes/api_client.h"
#include "kubernetes/own_daemonset.h"
#include "probes/pin_store.h"
#include "probes/pin_uninstall.h"

namespace gpuledger::node {
namespace {

// Short enough that the three requests fit in a pod's default 30 s grace period
// with the ledger's last window.
constexpr std::chrono::seconds kApiTimeout{5};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

PinsOnExit ask_kubernetes(const NodeOptions& cmd, const kubernetes::ClusterConfig& cluster) {
  const std::string pod = env("POD_NAME"), ns = env("POD_NAMESPACE");
  if (pod.empty() || ns.empty())
    return {false, "kept for the next agent (--keep-pins-on-exit; POD_NAME and POD_NAMESPACE are not set, so "
                   "whether its DaemonSet still wants this node is not asked)"};
  try {
    kubernetes::ApiClient api(cluster);
    const auto own = kubernetes::judge_own_daemonset(api, ns, pod, kubernetes::resolve_node_name(cmd.node_name),
                                                     kApiTimeout);
    switch (own.verdict) {
      case kubernetes::DaemonSetVerdict::kGone:
        return {true, own.why + ": this was the node's last agent"};
      case kubernetes::DaemonSetVerdict::kStays:
        return {false, "kept for the next agent: " + own.why};
      case kubernetes::DaemonSetVerdict::kUnknown:
        break;
    }
    return {false, "kept for the next agent, as the Kubernetes API cannot tell whether one comes (" + own.why + ")"};
  } catch (const Error& e) {
    return {false, std::string("kept for the next agent, as the Kubernetes API cannot be asked (") + e.what() + ")"};
  }
}

}  // namespace

PinsOnExit decide_pins_on_exit(const NodeOptions& cmd, const std::optional<kubernetes::ClusterConfig>& cluster) {
  if (!cmd.keep_pins_on_exit) return {true, "stopped without --keep-pins-on-exit"};
  if (cluster) return ask_kubernetes(cmd, *cluster);
  return {false, "kept for the next agent (--keep-pins-on-exit)"};
}

void apply_pins_on_exit(const PinsOnExit& plan, const std::string& pin_dir) {
  // A directory off bpffs holds no pins: the agent ran unpinned (and said so).
  if (pin_dir.empty() || !probes::on_bpffs(pin_dir)) return;
  if (!plan.remove) {
    spdlog::info("BPF pins in {} {}; `gpuledger uninstall` removes them", pin_dir, plan.why);
    return;
  }
  try {
    const auto removed = probes::remove_pinned_data_plane(pin_dir);
    if (!removed.found) return;
    spdlog::info("BPF pins: removed {} pins under {} ({}): the probes are detached", removed.pins, pin_dir, plan.why);
  } catch (const probes::PinsHeld&) {
    spdlog::warn("BPF pins in {} kept: another agent took them over as this one stopped", pin_dir);
  } catch (const Error& e) {
    spdlog::error("BPF pins in {} not removed ({}): run `gpuledger uninstall`", pin_dir, e.what());
  }
}

}  // namespace gpuledger::node
