// Who wrote which annotation, from metadata.managedFields (field_owners.h),
// parsed strictly and bounded: the pod's metadata is its author's.
#include <gtest/gtest.h>

#include "kubernetes/field_owners.h"
#include "kubernetes/pod_directory.h"
#include "scheduler_records.h"

namespace gpuledger::kubernetes {
namespace {

bool any_key(std::string_view) { return true; }

TEST(FieldOwners, EachAnnotationAndLabelHasTheManagersThatWroteItsValue) {
  nlohmann::json md = {{"name", "p"}};
  md["managedFields"] = {testing::managed_by("kubectl-create", "2026-01-01T10:00:00Z", {"a"}, {"team"}),
                         testing::managed_by("scheduler", "2026-01-01T10:00:05.123456Z",
                                             {"hami.io/vgpu-devices-allocated", "a"})};
  auto owners = parse_field_owners(md, any_key);
  EXPECT_TRUE(owners.present);
  ASSERT_EQ(owners.annotations.size(), 2u);
  EXPECT_EQ(owners.annotations.at("a"),
            (std::vector<FieldOwner>{{"kubectl-create", 1767261600}, {"scheduler", 1767261605}}));
  EXPECT_EQ(owners.annotations.at("hami.io/vgpu-devices-allocated"), (std::vector<FieldOwner>{{"scheduler", 1767261605}}));
  EXPECT_EQ(owners.labels.at("team"), (std::vector<FieldOwner>{{"kubectl-create", 1767261600}}));
  auto only_a = parse_field_owners(md, [](std::string_view k) { return k == "a"; });
  EXPECT_EQ(only_a.annotations.size(), 1u);
  EXPECT_TRUE(only_a.labels.empty());
}

TEST(FieldOwners, HostileManagedFieldsAreBoundedAndNeverThrow) {
  for (const char* text : {R"({})", R"({"managedFields": 7})", R"({"managedFields": [7, "x", null]})",
                           R"({"managedFields": [{"manager": "m", "fieldsV1": {"f:metadata": []}}]})",
                           R"({"managedFields": [{"manager": "m", "fieldsType": "FieldsV2",
                               "fieldsV1": {"f:metadata": {"f:annotations": {"f:a": {}}}}}]})",
                           R"({"managedFields": [{"manager": "", "fieldsV1": {"f:metadata": {"f:annotations": {"f:a": {}}}}}]})"}) {
    auto owners = parse_field_owners(nlohmann::json::parse(text), any_key);
    EXPECT_TRUE(owners.annotations.empty()) << text;
  }
  nlohmann::json md;
  for (int i = 0; i < 1000; ++i)
    md["managedFields"].push_back(testing::managed_by("m" + std::to_string(i), "2026-01-01T10:00:00Z", {"a"}));
  EXPECT_EQ(parse_field_owners(md, any_key).annotations.at("a").size(), kMaxManagedFieldEntries);
  md["managedFields"] = {testing::managed_by(std::string(kMaxManagerName + 1, 'm'), "x", {"a"})};
  EXPECT_TRUE(parse_field_owners(md, any_key).annotations.empty());
  EXPECT_FALSE(parse_field_owners(md, any_key).annotations.count("a"));
}

TEST(FieldOwners, Rfc3339Times) {
  EXPECT_EQ(parse_rfc3339_seconds("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_rfc3339_seconds("2026-01-01T10:00:00Z"), 1767261600);
  EXPECT_EQ(parse_rfc3339_seconds("2026-01-01T12:00:00+02:00"), 1767261600);
  EXPECT_EQ(parse_rfc3339_seconds("2026-01-01T10:00:00.5Z"), 1767261600);
  for (const char* bad : {"", "2026-01-01", "2026-01-01 10:00:00Z", "2026-13-01T10:00:00Z", "2026-01-01T10:00:00",
                          "2026-01-01T10:00:00ZZ", "2026-01-01T10:00:00.Z", "2026-01-01T25:00:00Z", "yesterday"})
    EXPECT_FALSE(parse_rfc3339_seconds(bad)) << bad;
}

TEST(FieldOwners, PodsKeepTheOwnersOfTheirSharingKeysTheirSchedulingTimeAndRequests) {
  auto pod = nlohmann::json::parse(R"({"metadata": {"uid": "u1", "name": "p", "namespace": "ml",
      "annotations": {"gpu-fraction": "0.5", "unrelated": "x"}},
    "spec": {"nodeName": "node-1", "containers": [
      {"name": "main", "resources": {"requests": {"nvidia.com/gpucores": "10", "cpu": "1"},
                                     "limits": {"nvidia.com/gpucores": "50", "nvidia.com/gpumem": "3000"}}},
      {"name": "side"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T10:09:00Z"},
                              {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T10:00:02Z"}]}})");
  testing::set_managed_fields(pod, {testing::managed_by("kubectl-create", "2026-01-01T10:00:00Z", {"gpu-fraction", "unrelated"})});
  auto info = parse_pod(pod, nullptr);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->sharing_owners.annotations.size(), 1u);  // only the keys sharing reads
  EXPECT_EQ(info->sharing_owners.annotations.at("gpu-fraction")[0].manager, "kubectl-create");
  EXPECT_EQ(info->scheduled_at, 1767261602);
  ASSERT_EQ(info->container_resources.size(), 2u);
  EXPECT_EQ(info->container_resources[0], (LabelMap{{"nvidia.com/gpucores", "50"}, {"nvidia.com/gpumem", "3000"}}));
  EXPECT_TRUE(info->container_resources[1].empty());
}

}  // namespace
}  // namespace gpuledger::kubernetes
