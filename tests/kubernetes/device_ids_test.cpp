#include <gtest/gtest.h>

#include "kubernetes/device_ids.h"
#include "kubernetes/gpu_allocation.h"

namespace gpuledger::kubernetes {
namespace {

constexpr char kUuid[] = "GPU-8f6a1c2e-1111-2222-3333-444455556666";
constexpr char kMig[] = "MIG-5a1b2c3d-aaaa-bbbb-cccc-ddddeeeeffff";

struct Case {
  const char* resource;
  std::string id;
  std::string uuid;
  std::string mig_instance;
  Sharing sharing;
};

TEST(DeviceIds, EveryPublishedFormResolvesToItsGpuAndSharing) {
  const std::string gpu = kUuid;
  const std::vector<Case> cases = {
      {"nvidia.com/gpu", gpu, gpu, "", Sharing::kExclusive},
      {"nvidia.com/gpu", gpu + "::0", gpu, "", Sharing::kReplicas},
      {"nvidia.com/gpu", gpu + "::17", gpu, "", Sharing::kReplicas},
      {"nvidia.com/gpu.shared", gpu, gpu, "", Sharing::kReplicas},
      {"nvidia.com/gpu.shared", gpu + "::3", gpu, "", Sharing::kReplicas},
      {"nvidia.com/mig-1g.5gb", kMig, kMig, "", Sharing::kMig},
      {"nvidia.com/mig-1g.5gb", "MIG-" + gpu + "/7/0", gpu, "7/0", Sharing::kMig},
      {"nvidia.com/mig-3g.20gb", "MIG-" + gpu + "/1/2", gpu, "1/2", Sharing::kMig},
      {"nvidia.com/mig-1g.5gb", std::string(kMig) + "::1", kMig, "", Sharing::kReplicas},
      {"nvidia.com/gpu", "nvidia0", "nvidia0", "", Sharing::kExclusive},
      {"nvidia.com/gpu", "nvidia3/vgpu2", "nvidia3", "", Sharing::kReplicas},
      {"nvidia.com/mig-1g.5gb", "nvidia1/gi2", "nvidia1", "gi2", Sharing::kMig},
      {"nvidia.com/gpu", "nvidia1/gi2/vgpu0", "nvidia1", "gi2", Sharing::kReplicas},
      {"example.com/gpu", "0000:3b:00.0", "0000:3b:00.0", "", Sharing::kExclusive},
      {"nvidia.com/gpu", "nvidia0/bogus", "nvidia0/bogus", "", Sharing::kExclusive},
  };
  for (const auto& c : cases) {
    auto dev = parse_device_id(c.resource, c.id);
    ASSERT_TRUE(dev.has_value()) << c.id;
    EXPECT_EQ(dev->uuid, c.uuid) << c.id;
    EXPECT_EQ(dev->mig_instance, c.mig_instance) << c.id;
    EXPECT_EQ(to_string(dev->sharing), to_string(c.sharing)) << c.resource << " " << c.id;
  }
}

TEST(DeviceIds, IdsThatCannotBeDevicesAreRejected) {
  for (std::string id : std::vector<std::string>{"", " ", "GPU-1 2", "GPU-\n", "::3"})
    EXPECT_FALSE(parse_device_id("nvidia.com/gpu", id).has_value()) << "'" << id << "'";
}

TEST(DeviceIds, GpuResourcesAreTheNvidiaOnesAndConfiguredExtras) {
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu", {}));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu.shared", {}));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/mig-2g.10gb", {}));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/gpumem", {}));
  EXPECT_FALSE(is_gpu_resource("example.com/gpu", {}));
  EXPECT_TRUE(is_gpu_resource("example.com/gpu", {"example.com/gpu"}));
  EXPECT_FALSE(is_gpu_resource("cpu", {}));
}

TEST(GpuAllocation, SharedReplicasMigAndExclusiveComeOutPerContainer) {
  const std::string gpu0 = "GPU-00000000-0000-0000-0000-000000000000";
  const std::string gpu1 = "GPU-11111111-1111-1111-1111-111111111111";
  std::vector<PodAllocation> pods = {
      {"a", "ml", {{"main", {{"nvidia.com/gpu", {gpu0 + "::0"}}, {"example.com/fpga", {"f0"}}}, {}}}},
      {"b", "ml", {{"main", {{"nvidia.com/gpu", {gpu0 + "::1"}}}, {}}}},
      {"c", "web", {{"infer", {{"nvidia.com/mig-1g.5gb", {"MIG-" + gpu1 + "/1/0"}}}, {}}}},
      {"d", "web", {{"train", {{"nvidia.com/gpu", {gpu1, ""}}}, {}}}},
      {"e", "dra",
       {{"main", {}, {{"gpu.nvidia.com", "node-1", "gpu-0", {"k8s.gpu.nvidia.com/gpu=" + gpu0}, "claim", "dra"},
                      {"other.example.com", "p", "x", {}, "c2", "dra"}}}}},
  };
  size_t skipped = 0;
  auto out = gpu_allocations(pods, {}, &skipped);
  EXPECT_EQ(skipped, 1u);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].pod, "e");
  EXPECT_EQ(out[0].resource, "gpu.nvidia.com");
  EXPECT_EQ(out[0].device_id, "node-1/gpu-0");
  EXPECT_EQ(out[0].device.uuid, gpu0);
  EXPECT_EQ(out[1].pod, "a");
  EXPECT_EQ(out[1].device.uuid, gpu0);
  EXPECT_EQ(out[1].device.sharing, Sharing::kReplicas);
  EXPECT_EQ(out[2].pod, "b");
  EXPECT_EQ(out[2].device.uuid, gpu0);
  EXPECT_EQ(out[3].pod, "c");
  EXPECT_EQ(out[3].device.sharing, Sharing::kMig);
  EXPECT_EQ(out[3].device.uuid, gpu1);
  EXPECT_EQ(out[4].pod, "d");
  EXPECT_EQ(out[4].device.sharing, Sharing::kExclusive);

  auto inv = gpu_inventory({{"nvidia.com/gpu", {gpu0, gpu1}}, {"cpu", {"0"}}}, {});
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_EQ(inv[1].device.uuid, gpu1);
}

}  // namespace
}  // namespace gpuledger::kubernetes
