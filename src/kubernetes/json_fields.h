#pragma once
// Reading fields of Kubernetes objects that may be anything: a missing or
// mistyped field reads as absent, never throws.
#include <nlohmann/json.hpp>

#include <string>

namespace gpuledger::kubernetes {

inline const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

inline std::string string_member(const nlohmann::json& j, const char* key) {
  auto m = member(j, key);
  return m && m->is_string() ? m->get<std::string>() : "";
}

}  // namespace gpuledger::kubernetes
