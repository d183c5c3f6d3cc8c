#pragma once
// The node object's sharing labels and annotations (GPU Feature Discovery,
// HAMi) and the node's DRA ResourceSlices, kept current by reflectors
// (kubernetes_metadata.h) for sharing.h. Thread-safe.
#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kubernetes/pod_directory.h"
#include "kubernetes/reflector.h"
#include "kubernetes/sharing_facts.h"

namespace gpuledger::kubernetes {

// The devices of one resource.k8s.io ResourceSlice (v1, or v1beta1's
// devices[].basic form); none for anything else.
std::vector<SliceDevice> parse_resource_slice(const nlohmann::json& object);

class NodeFacts {
 public:
  void set_node(const nlohmann::json& node);  // the sharing keys of its labels and annotations
  void replace_slices(std::map<std::string, std::vector<SliceDevice>> slices);  // by slice name
  void upsert_slice(const std::string& name, std::vector<SliceDevice> devices);
  void delete_slice(const std::string& name);
  // Everything sharing.h reads, with the live pods of `pods` (null: none).
  SharingFacts facts(const PodDirectory* pods) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> labels_, annotations_;
  std::map<std::string, std::vector<SliceDevice>> slices_;
};

class NodeSink : public ResourceSink {
 public:
  explicit NodeSink(NodeFacts& facts) : facts_(facts) {}
  void replace(const std::vector<nlohmann::json>& items) override;
  void apply(EventType type, const nlohmann::json& object) override;

 private:
  NodeFacts& facts_;
};

class ResourceSliceSink : public ResourceSink {
 public:
  explicit ResourceSliceSink(NodeFacts& facts) : facts_(facts) {}
  void replace(const std::vector<nlohmann::json>& items) override;
  void apply(EventType type, const nlohmann::json& object) override;

 private:
  NodeFacts& facts_;
};

}  // namespace gpuledger::kubernetes
