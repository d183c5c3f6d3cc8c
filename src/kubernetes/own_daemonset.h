#pragma once
// Whether the DaemonSet that runs this agent's pod still wants an agent on
// this node: asked of the API server when the agent is told to stop, so that a
// rolling update keeps the pinned data plane for the next pod and a removal
// (the DaemonSet deleted or being deleted, or this node no longer selected by
// it) takes the probes away with the last one. The pod is found by POD_NAME and
// POD_NAMESPACE (the downward API), the DaemonSet by the pod's controller
// owner reference; RBAC: get on pods and nodes, and on that DaemonSet.
#include <chrono>
#include <string>

#include "kubernetes/api_client.h"

namespace gpuledger::kubernetes {

enum class DaemonSetVerdict {
  kStays,    // still there and still selecting this node: a successor pod comes
  // Deleted, being deleted, or no longer selecting this node; or the agent's
  // own access withdrawn (401, 403: its ServiceAccount or RBAC deleted).
  kGone,
  kUnknown,  // the API could not tell (unreachable, forbidden, not a DaemonSet's pod)
};

struct OwnDaemonSet {
  DaemonSetVerdict verdict = DaemonSetVerdict::kUnknown;
  std::string why;  // for the log
};

// Each request waits at most `timeout`.
OwnDaemonSet judge_own_daemonset(ApiClient& api, const std::string& pod_namespace, const std::string& pod_name,
                                 const std::string& node_name, std::chrono::seconds timeout);

}  // namespace gpuledger::kubernetes
