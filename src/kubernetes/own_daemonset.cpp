#include "kubernetes/own_daemonset.h"

#include <nlohmann/json.hpp>

#include <optional>

#include "kubernetes/json_fields.h"
#include "kubernetes/node_selection.h"

namespace gpuledger::kubernetes {
namespace {

// Names from the environment and from objects go into request paths: only
// what Kubernetes allows in an object name (DNS subdomain characters).
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return true;
}

OwnDaemonSet unknown(const std::string& why) { return {DaemonSetVerdict::kUnknown, why}; }

// An API server that knew this agent at its start and now answers 401 or 403
// has had the agent's ServiceAccount, its token or its RBAC deleted: what
// `kubectl delete -k` and a deleted namespace do - before the DaemonSet, whose
// pods are stopped last. Nobody takes away a running agent's access to update it.
std::optional<OwnDaemonSet> access_withdrawn(const ApiResponse& res, const std::string& what) {
  if (!res.error.empty() || (res.status != 401 && res.status != 403)) return std::nullopt;
  return OwnDaemonSet{DaemonSetVerdict::kGone,
                      "the API server refuses to show " + what + " now (" + res.describe() +
                          "): this agent's ServiceAccount or RBAC was deleted, as when gpuledger is removed"};
}

std::optional<nlohmann::json> parsed(const ApiResponse& res) {
  auto j = nlohmann::json::parse(res.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// The name of the DaemonSet that controls `pod`, or "".
std::string controlling_daemonset(const nlohmann::json& pod) {
  const nlohmann::json* metadata = member(pod, "metadata");
  const nlohmann::json* owners = metadata ? member(*metadata, "ownerReferences") : nullptr;
  if (!owners || !owners->is_array()) return "";
  for (const auto& owner : *owners) {
    const nlohmann::json* controller = member(owner, "controller");
    if (string_member(owner, "kind") == "DaemonSet" && string_member(owner, "apiVersion") == "apps/v1" &&
        controller && controller->is_boolean() && controller->get<bool>())
      return string_member(owner, "name");
  }
  return "";
}

}  // namespace

OwnDaemonSet judge_own_daemonset(ApiClient& api, const std::string& pod_namespace, const std::string& pod_name,
                                 const std::string& node_name, std::chrono::seconds timeout) {
  if (!valid_name(pod_namespace) || !valid_name(pod_name))
    return unknown("POD_NAME and POD_NAMESPACE (the downward API) do not name this agent's pod");
  const std::string ns_path = "/namespaces/" + pod_namespace;
  const ApiResponse pod_res = api.get("/api/v1" + ns_path + "/pods/" + pod_name, timeout);
  if (auto gone = access_withdrawn(pod_res, "this agent's pod")) return *gone;
  if (!pod_res.ok()) return unknown("cannot read this agent's pod " + pod_namespace + "/" + pod_name + ": " +
                                    pod_res.describe());
  const auto pod = parsed(pod_res);
  const std::string daemonset = pod ? controlling_daemonset(*pod) : "";
  if (!valid_name(daemonset)) return unknown("the pod " + pod_namespace + "/" + pod_name + " is not a DaemonSet's");
  const std::string what = "the DaemonSet " + pod_namespace + "/" + daemonset;

  const ApiResponse ds_res = api.get("/apis/apps/v1" + ns_path + "/daemonsets/" + daemonset, timeout);
  if (ds_res.error.empty() && ds_res.status == 404) return {DaemonSetVerdict::kGone, what + " was deleted"};
  if (auto gone = access_withdrawn(ds_res, what)) return *gone;
  if (!ds_res.ok()) return unknown("cannot read " + what + ": " + ds_res.describe());
  const auto ds = parsed(ds_res);
  if (!ds) return unknown("cannot read " + what + ": the API server's answer is not an object");
  const nlohmann::json* metadata = member(*ds, "metadata");
  if (metadata && !string_member(*metadata, "deletionTimestamp").empty())
    return {DaemonSetVerdict::kGone, what + " is being deleted"};

  if (!valid_name(node_name)) return unknown(what + " remains; the node name '" + node_name + "' is not valid");
  const ApiResponse node_res = api.get("/api/v1/nodes/" + node_name, timeout);
  if (auto gone = access_withdrawn(node_res, "the node " + node_name)) return *gone;
  if (!node_res.ok())
    return unknown(what + " remains; cannot read the node " + node_name + ": " + node_res.describe());
  NodeIdentity node{node_name, {}};
  if (const auto n = parsed(node_res))
    if (const nlohmann::json* m = member(*n, "metadata"))
      if (const nlohmann::json* labels = member(*m, "labels"); labels && labels->is_object())
        for (const auto& [k, v] : labels->items())
          if (v.is_string()) node.labels[k] = v.get<std::string>();
  const nlohmann::json* spec = member(*ds, "spec");
  const nlohmann::json* tmpl = spec ? member(*spec, "template") : nullptr;
  const nlohmann::json* pod_spec = tmpl ? member(*tmpl, "spec") : nullptr;
  if (!pod_spec) return unknown(what + " has no pod template");
  if (!template_selects_node(*pod_spec, node))
    return {DaemonSetVerdict::kGone, what + " no longer selects the node " + node_name};
  return {DaemonSetVerdict::kStays, what + " remains and still selects the node " + node_name +
                                        " (an update or a restart: its next pod takes the pins over)"};
}

}  // namespace gpuledger::kubernetes
