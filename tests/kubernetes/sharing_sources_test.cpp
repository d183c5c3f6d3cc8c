// Shares of shared GPUs end to end through the real sources: a gRPC test
// kubelet (Pod Resources v1: List, GetAllocatableResources, dynamic_resources)
// and an HTTPS test API server (pods with HAMi and KAI records, the node's GFD
// labels and HAMi registration, resource.k8s.io/v1 ResourceSlices), read by
// the agent's own reflectors and Pod Resources monitor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/pod_resources_client.h"
#include "poll.h"
#include "scheduler_records.h"
#include "test_api_server.h"
#include "test_kubelet.h"

namespace gpuledger::kubernetes {
namespace {
namespace fs = std::filesystem;
using testing::TestApiServer;
using testing::TestKubelet;

const std::string kGpu0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000";  // time-sliced, 4 replicas
const std::string kGpu1 = "GPU-bbbbbbbb-1111-4111-8111-111111111111";  // HAMi
const std::string kGpu2 = "GPU-cccccccc-2222-4222-8222-222222222222";  // KAI reservation
const std::string kGpu3 = "GPU-eeeeeeee-4444-4444-8444-444444444444";  // DRA, UUID only in the ResourceSlice

nlohmann::json pod_json(const std::string& uid, const std::string& ns, const std::string& name,
                        const std::map<std::string, std::string>& labels,
                        const std::map<std::string, std::string>& annotations, const std::vector<std::string>& containers) {
  auto p = TestApiServer::make_pod(uid, ns, name, "node-1", labels, {});
  if (!annotations.empty()) p["metadata"]["annotations"] = annotations;
  p["spec"]["containers"] = nlohmann::json::array();
  for (const auto& c : containers) p["spec"]["containers"].push_back({{"name", c}, {"image", "busybox"}});
  return p;
}

void add_claim(v1::ContainerResources* c, const std::string& claim, const std::string& device) {
  auto* dyn = c->add_dynamic_resources();
  dyn->set_claim_name(claim);
  dyn->set_claim_namespace("ml");
  auto* cr = dyn->add_claim_resources();
  cr->set_driver_name("gpu.nvidia.com");
  cr->set_pool_name("node-1");
  cr->set_device_name(device);
}

TEST(SharingSources, EveryFormFromTheKubeletAndTheApiServer) {
  char tmpl[] = "/tmp/gpuledger-sharing-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);

  TestApiServer api(TestApiServer::Options{});
  api.start();
  api.upsert_node({{"apiVersion", "v1"},
                   {"kind", "Node"},
                   {"metadata",
                    {{"name", "node-1"},
                     {"uid", "node-uid-1"},
                     {"labels",
                      {{"nvidia.com/gpu.present", "true"},
                       {"nvidia.com/gpu.sharing-strategy", "time-slicing"},
                       {"nvidia.com/gpu.replicas", "4"},
                       {"kubernetes.io/hostname", "node-1"}}},
                     {"annotations",
                      {{"hami.io/node-nvidia-register",
                        R"([{"id":")" + kGpu1 + R"(","count":10,"devmem":24000,"devcore":100,"type":"NVIDIA-A10","numa":0,"health":true}])"}}}}}});
  api.upsert_node({{"apiVersion", "v1"}, {"kind", "Node"},
                   {"metadata", {{"name", "node-2"}, {"uid", "node-uid-2"}, {"labels", {{"nvidia.com/gpu.replicas", "2"}}}}}});
  api.upsert_resource_slice(nlohmann::json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
    "metadata":{"name":"node-1-gpu.nvidia.com-x2v9q"},
    "spec":{"driver":"gpu.nvidia.com","nodeName":"node-1","pool":{"name":"node-1","generation":1,"resourceSliceCount":1},
      "devices":[{"name":"gpu-3","attributes":{"type":{"string":"gpu"},"uuid":{"string":")" + kGpu3 + R"("}}}]}})"));
  api.upsert_pod(pod_json("u-ts-a", "ml", "ts-a", {}, {}, {"main"}));
  auto hami = pod_json("u-hami", "ml", "hami", {}, {{"hami.io/vgpu-devices-allocated", kGpu1 + ",NVIDIA,6000,0:;"},
                                                    {"hami.io/vgpu-devices-to-allocate", ";"},
                                                    {"hami.io/vgpu-node", "node-1"},
                                                    {"hami.io/bind-phase", "success"}},
                       {"main"});
  hami["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "6000"}}}};
  testing::set_managed_fields(hami, {testing::managed_by("kubectl-create", "2026-01-01T10:00:00Z", {}),
                                     testing::managed_by("scheduler", "2026-01-01T10:00:01Z",
                                                         {"hami.io/vgpu-devices-allocated", "hami.io/vgpu-node"}),
                                     testing::managed_by("nvidia-device-plugin", "2026-01-01T10:00:02Z",
                                                         {"hami.io/bind-phase"})});
  api.upsert_pod(hami);
  api.upsert_pod(pod_json("u-res", "runai-reservation", "runai-reservation-gpu-node-1-q8z7w",
                          {{"runai-gpu-group", "5d2c9e1f"}, {"app", "runai-reservation"}},
                          {{"run.ai/reserve_for_gpu_index", kGpu2}}, {"runai-reservation"}));
  auto kai = pod_json("u-kai", "team-a", "notebook", {{"runai-gpu-group", "5d2c9e1f"}},
                      {{"gpu-fraction", "0.25"}, {"runai-gpu", kGpu2}}, {"jupyter"});
  testing::set_managed_fields(kai, {testing::managed_by("kubectl-create", "2026-01-01T10:00:00Z", {"gpu-fraction"}),
                                    testing::managed_by("binder", "2026-01-01T10:00:03Z", {"runai-gpu"},
                                                        {"runai-gpu-group"})});
  testing::set_scheduled(kai, "2026-01-01T10:00:03Z");
  api.upsert_pod(kai);

  TestKubelet kubelet(dir + "/kubelet.sock");
  v1::ListPodResourcesResponse list;
  TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(list, "ml", "ts-a"), "main"),
                           "nvidia.com/gpu", {kGpu0 + "::0", kGpu0 + "::2", kGpu0 + "::3"});
  TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(list, "ml", "hami"), "main"),
                           "nvidia.com/gpu", {kGpu1 + "-7"});
  TestKubelet::add_devices(TestKubelet::add_container(
                               TestKubelet::add_pod(list, "runai-reservation", "runai-reservation-gpu-node-1-q8z7w"),
                               "runai-reservation"),
                           "nvidia.com/gpu", {kGpu2});
  TestKubelet::add_container(TestKubelet::add_pod(list, "team-a", "notebook"), "jupyter");
  add_claim(TestKubelet::add_container(TestKubelet::add_pod(list, "ml", "dra-a"), "main"), "shared-gpu", "gpu-3");
  add_claim(TestKubelet::add_container(TestKubelet::add_pod(list, "ml", "dra-b"), "main"), "shared-gpu", "gpu-3");
  kubelet.set_list(list);  // GetAllocatableResources answers nothing: the GFD label says 4 replicas

  KubernetesOptions ko;
  ko.cluster = load_kubeconfig(api.write_kubeconfig(dir));
  ko.node_name = "node-1";
  ko.initial_backoff = std::chrono::milliseconds(50);
  auto directory = std::make_shared<PodDirectory>(std::chrono::minutes(10));
  KubernetesMetadata metadata(ko, directory);
  metadata.start();
  PodResourcesMonitor monitor(dir + "/kubelet.sock", {}, std::chrono::seconds(60));
  monitor.set_sharing_facts([&] { return metadata.sharing_facts(); });
  ASSERT_TRUE(testing::poll_until([&] {
    auto f = metadata.sharing_facts();
    return f.pods.size() == 4 && f.slice_devices.size() == 1 && f.node_labels.size() == 2;
  }));
  auto facts = metadata.sharing_facts();
  EXPECT_EQ(facts.node_labels.count("kubernetes.io/hostname"), 0u);  // only the keys sharing reads
  monitor.poll_now();
  auto st = monitor.state();
  ASSERT_TRUE(st.up) << st.last_error;
  EXPECT_EQ(st.sharing.refused_annotations, 0u);
  EXPECT_EQ(st.sharing.unknown_shares, 0u);

  struct Want {
    std::string ns, pod, container, uuid, mode, basis;
    double share;
  };
  std::vector<Want> want = {
      {"ml", "dra-a", "main", kGpu3, "dra-shared", "claim", 0.5},
      {"ml", "dra-b", "main", kGpu3, "dra-shared", "claim", 0.5},
      {"ml", "hami", "main", kGpu1, "fraction", "memory", 0.25},
      {"ml", "ts-a", "main", kGpu0, "time-slicing", "replicas", 0.75},
      {"team-a", "notebook", "jupyter", kGpu2, "fraction", "fraction", 0.25},
  };
  ASSERT_EQ(st.allocations.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& a = st.allocations[i];
    EXPECT_EQ(a.namespace_name, want[i].ns) << i;
    EXPECT_EQ(a.pod, want[i].pod) << i;
    EXPECT_EQ(a.container, want[i].container) << i;
    EXPECT_EQ(a.device.uuid, want[i].uuid) << i;
    EXPECT_EQ(a.mode, want[i].mode) << i;
    EXPECT_EQ(a.share_basis, want[i].basis) << i;
    EXPECT_EQ(a.share, want[i].share) << i;
    EXPECT_TRUE(a.share_known) << i;
  }
  EXPECT_EQ(st.allocations[3].device_id, kGpu0 + "::0," + kGpu0 + "::2," + kGpu0 + "::3");

  // A tenant rewrites its own fraction without the scheduler: nothing changes
  // without a group the reservation pod holds, and HAMi's record must still
  // name the device the kubelet handed out.
  api.upsert_pod(pod_json("u-hami", "ml", "hami", {}, {{"hami.io/vgpu-devices-allocated", kGpu2 + ",NVIDIA,100,1:;"},
                                                      {"hami.io/vgpu-node", "node-1"},
                                                      {"hami.io/bind-phase", "success"}},
                          {"main"}));
  ASSERT_TRUE(testing::poll_until([&] {
    auto f = metadata.sharing_facts();
    auto it = f.pods.find({"ml", "hami"});
    return it != f.pods.end() && it->second.annotations.at("hami.io/vgpu-devices-allocated").starts_with(kGpu2);
  }));
  monitor.poll_now();
  st = monitor.state();
  EXPECT_EQ(st.sharing.refused_annotations, 1u);
  for (const auto& a : st.allocations) {
    if (a.pod == "hami") {  // billed the whole device its slot is of, not the one its record names
      EXPECT_NE(a.mode, "fraction");
      EXPECT_EQ(a.device.uuid, kGpu1);
      EXPECT_EQ(a.share, 1.0);
      EXPECT_EQ(a.share_basis, "refused");
    }
  }
  metadata.stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::kubernetes
