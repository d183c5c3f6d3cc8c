#pragma once
// Errors in YAML files as every gpuledger file names them: "<what> <file>:<line>:<column>: <problem>"
// (the configuration's sections, the price list). Header-only: its users link yaml-cpp already.
#include <yaml-cpp/yaml.h>

#include <string>

#include "common/error.h"

namespace gpuledger {

// `what`: the kind of file ("config", "prices").
[[noreturn]] inline void yaml_fail(const std::string& what, const std::string& source, const YAML::Node& node,
                                   const std::string& problem) {
  const auto mark = node.Mark();
  if (mark.is_null()) throw Error(what + " " + source + ": " + problem);
  throw Error(what + " " + source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) +
              ": " + problem);
}

// The document, or an Error naming the place YAML could not be read at.
inline YAML::Node yaml_load(const std::string& what, const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(what + " " + source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": not valid YAML: " + e.msg);
  }
}

// A scalar's text, or an Error saying `key` must be a string.
inline std::string yaml_scalar(const std::string& what, const std::string& source, const YAML::Node& node,
                               const std::string& key) {
  if (!node.IsScalar()) yaml_fail(what, source, node, key + " must be a string");
  return node.Scalar();
}

}  // namespace gpuledger
