#pragma once
// Pods as the API server shows them once a scheduler has written its records:
// metadata.managedFields naming who wrote which annotation and label (and
// when), and the PodScheduled condition. For the sharing tests.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpuledger::testing {

// One managedFields entry: `manager` owns these annotations and labels, and
// last changed its fields at `time` (RFC 3339).
inline nlohmann::json managed_by(const std::string& manager, const std::string& time,
                                 const std::vector<std::string>& annotations, const std::vector<std::string>& labels = {}) {
  nlohmann::json md = nlohmann::json::object();
  for (const auto& a : annotations) md["f:annotations"]["f:" + a] = nlohmann::json::object();
  for (const auto& l : labels) md["f:labels"]["f:" + l] = nlohmann::json::object();
  return {{"manager", manager}, {"operation", "Update"}, {"apiVersion", "v1"}, {"time", time},
          {"fieldsType", "FieldsV1"}, {"fieldsV1", {{"f:metadata", md}}}};
}

inline void set_managed_fields(nlohmann::json& pod, std::vector<nlohmann::json> entries) {
  pod["metadata"]["managedFields"] = std::move(entries);
}

inline void set_scheduled(nlohmann::json& pod, const std::string& time) {
  pod["status"]["conditions"] = {{{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", time}}};
}

}  // namespace gpuledger::testing
