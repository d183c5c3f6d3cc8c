#include "kubernetes/node_selection.h"

#include <cstdlib>

#include "kubernetes/json_fields.h"

namespace gpuledger::kubernetes {
namespace {

bool integer(const std::string& text, long long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(text.c_str(), &end, 10);
  return end && *end == '\0';
}

// One NodeSelectorRequirement against a value (nullptr: the key is absent).
bool requirement_holds(const nlohmann::json& req, const std::string* value) {
  const std::string op = string_member(req, "operator");
  const nlohmann::json* values = member(req, "values");
  auto listed = [&] {
    if (!value || !values || !values->is_array()) return false;
    for (const auto& v : *values)
      if (v.is_string() && v.get<std::string>() == *value) return true;
    return false;
  };
  if (op == "In") return listed();
  if (op == "NotIn") return !listed();
  if (op == "Exists") return value != nullptr;
  if (op == "DoesNotExist") return value == nullptr;
  if (op == "Gt" || op == "Lt") {
    long long have = 0, bound = 0;
    if (!value || !values || !values->is_array() || values->size() != 1 || !(*values)[0].is_string() ||
        !integer(*value, &have) || !integer((*values)[0].get<std::string>(), &bound))
      return false;
    return op == "Gt" ? have > bound : have < bound;
  }
  return false;  // an operator this version does not know: not matched
}

// A NodeSelectorTerm: every requirement holds (an empty term matches nothing).
bool term_holds(const nlohmann::json& term, const NodeIdentity& node) {
  const nlohmann::json* expressions = member(term, "matchExpressions");
  const nlohmann::json* fields = member(term, "matchFields");
  size_t checked = 0;
  if (expressions && expressions->is_array())
    for (const auto& req : *expressions) {
      auto it = node.labels.find(string_member(req, "key"));
      if (!requirement_holds(req, it == node.labels.end() ? nullptr : &it->second)) return false;
      ++checked;
    }
  if (fields && fields->is_array())
    for (const auto& req : *fields) {
      if (string_member(req, "key") != "metadata.name" || !requirement_holds(req, &node.name)) return false;
      ++checked;
    }
  return checked > 0;
}

}  // namespace

bool template_selects_node(const nlohmann::json& pod_spec, const NodeIdentity& node) {
  if (const nlohmann::json* selector = member(pod_spec, "nodeSelector"); selector && !selector->is_null()) {
    if (!selector->is_object()) return false;
    for (const auto& [key, want] : selector->items()) {
      auto it = node.labels.find(key);
      if (!want.is_string() || it == node.labels.end() || it->second != want.get<std::string>()) return false;
    }
  }
  const nlohmann::json* affinity = member(pod_spec, "affinity");
  const nlohmann::json* node_affinity = affinity ? member(*affinity, "nodeAffinity") : nullptr;
  const nlohmann::json* required =
      node_affinity ? member(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  if (!required || required->is_null()) return true;
  const nlohmann::json* terms = member(*required, "nodeSelectorTerms");
  if (!terms || !terms->is_array()) return false;
  for (const auto& term : *terms)  // the terms are ORed
    if (term_holds(term, node)) return true;
  return false;
}

}  // namespace gpuledger::kubernetes
