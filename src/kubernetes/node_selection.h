#pragma once
// Whether a pod template still selects a node, as the scheduler and the
// DaemonSet controller judge it from the node's labels and name: the template's
// nodeSelector and its node affinity's required terms (matchExpressions with
// In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields on metadata.name).
// Taints are left out: gpuledger's DaemonSet tolerates them all.
#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace gpuledger::kubernetes {

struct NodeIdentity {
  std::string name;
  std::map<std::string, std::string> labels;
};

// `pod_spec`: a template's spec (spec.template.spec). Anything malformed in it
// selects nothing, as the API server would not have let it through.
bool template_selects_node(const nlohmann::json& pod_spec, const NodeIdentity& node);

}  // namespace gpuledger::kubernetes
