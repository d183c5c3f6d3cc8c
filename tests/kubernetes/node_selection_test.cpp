// Whether a DaemonSet's template still selects a node (kubernetes/node_selection.h):
// what a stopping agent decides the pins' fate with.
#include <gtest/gtest.h>

#include "kubernetes/node_selection.h"

namespace gpuledger::kubernetes {
namespace {

const NodeIdentity kNode{"gpu-7", {{"nvidia.com/gpu.present", "true"}, {"gpu.count", "8"}, {"zone", "a"}}};

// Vectors, not braced json: a one-element brace list would be that element, not an array.
nlohmann::json with_terms(const std::vector<nlohmann::json>& terms) {
  nlohmann::json spec;
  spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      nlohmann::json(terms);
  return spec;
}
nlohmann::json expr(const std::string& key, const std::string& op, const std::vector<std::string>& values = {}) {
  nlohmann::json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}
nlohmann::json term(const std::vector<nlohmann::json>& expressions) {
  nlohmann::json t;
  t["matchExpressions"] = nlohmann::json(expressions);
  return t;
}

TEST(NodeSelection, NodeSelectorNeedsEveryLabel) {
  EXPECT_TRUE(template_selects_node(nlohmann::json::object(), kNode));
  EXPECT_TRUE(template_selects_node({{"nodeSelector", {{"nvidia.com/gpu.present", "true"}}}}, kNode));
  EXPECT_TRUE(template_selects_node({{"nodeSelector", {{"nvidia.com/gpu.present", "true"}, {"zone", "a"}}}}, kNode));
  EXPECT_FALSE(template_selects_node({{"nodeSelector", {{"nvidia.com/gpu.present", "true"}, {"zone", "b"}}}}, kNode));
  EXPECT_FALSE(template_selects_node({{"nodeSelector", {{"gpuledger/agent", "true"}}}}, kNode));
  EXPECT_FALSE(template_selects_node({{"nodeSelector", {{"gpu.count", 8}}}}, kNode)) << "malformed: selects nothing";
  EXPECT_FALSE(template_selects_node({{"nodeSelector", "zone=a"}}, kNode));
}

TEST(NodeSelection, RequiredNodeAffinityOperators) {
  EXPECT_TRUE(template_selects_node(with_terms({term({expr("zone", "In", {"b", "a"})})}), kNode));
  EXPECT_FALSE(template_selects_node(with_terms({term({expr("zone", "In", {"b"})})}), kNode));
  EXPECT_FALSE(template_selects_node(with_terms({term({expr("zone", "NotIn", {"a"})})}), kNode));
  EXPECT_TRUE(template_selects_node(with_terms({term({expr("rack", "NotIn", {"r1"})})}), kNode)) << "absent key";
  EXPECT_TRUE(template_selects_node(with_terms({term({expr("zone", "Exists")})}), kNode));
  EXPECT_FALSE(template_selects_node(with_terms({term({expr("rack", "Exists")})}), kNode));
  EXPECT_TRUE(template_selects_node(with_terms({term({expr("rack", "DoesNotExist")})}), kNode));
  EXPECT_TRUE(template_selects_node(with_terms({term({expr("gpu.count", "Gt", {"4"})})}), kNode));
  EXPECT_FALSE(template_selects_node(with_terms({term({expr("gpu.count", "Lt", {"4"})})}), kNode));
  EXPECT_FALSE(template_selects_node(with_terms({term({expr("zone", "Gt", {"4"})})}), kNode)) << "not a number";
  EXPECT_FALSE(template_selects_node(with_terms({term({expr("zone", "Near", {"a"})})}), kNode)) << "unknown operator";
}

TEST(NodeSelection, TermsAreOredTheirRequirementsAnded) {
  EXPECT_TRUE(template_selects_node(
      with_terms({term({expr("zone", "In", {"b"})}), term({expr("zone", "In", {"a"}), expr("gpu.count", "Exists")})}),
      kNode));
  EXPECT_FALSE(template_selects_node(with_terms({term({expr("zone", "In", {"a"}), expr("rack", "Exists")})}), kNode));
  EXPECT_FALSE(template_selects_node(with_terms({nlohmann::json::object()}), kNode)) << "an empty term matches nothing";
  EXPECT_FALSE(template_selects_node(with_terms({}), kNode));
}

TEST(NodeSelection, MatchFieldsOnTheNodeName) {
  nlohmann::json by_name;
  by_name["matchFields"] = nlohmann::json::array({expr("metadata.name", "In", {"gpu-7"})});
  EXPECT_TRUE(template_selects_node(with_terms({by_name}), kNode));
  by_name["matchFields"][0]["values"] = nlohmann::json::array({"gpu-8"});
  EXPECT_FALSE(template_selects_node(with_terms({by_name}), kNode));
}

TEST(NodeSelection, NodeSelectorAndAffinityBothApply) {
  auto spec = with_terms({term({expr("zone", "In", {"a"})})});
  spec["nodeSelector"] = {{"gpuledger/agent", "true"}};
  EXPECT_FALSE(template_selects_node(spec, kNode));
  spec["nodeSelector"] = {{"nvidia.com/gpu.present", "true"}};
  EXPECT_TRUE(template_selects_node(spec, kNode));
}

}  // namespace
}  // namespace gpuledger::kubernetes
