// How each GPU allocation's share and sharing mode come out of the kubelet's
// answer and the API server's facts (sharing.h): exact values.
#include <gtest/gtest.h>

#include <functional>

#include "kubernetes/hami_annotations.h"
#include "kubernetes/node_facts.h"
#include "kubernetes/sharing.h"

namespace gpuledger::kubernetes {
namespace {

const std::string kGpu0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
const std::string kGpu1 = "GPU-bbbbbbbb-1111-4111-8111-111111111111";
const std::string kMig = "MIG-dddddddd-3333-4333-8333-333333333333";

PodAllocation pod(const std::string& ns, const std::string& name,
                  std::vector<std::pair<std::string, std::vector<ContainerDevices>>> containers) {
  PodAllocation p{name, ns, {}};
  for (auto& [c, devs] : containers) p.containers.push_back({c, devs, {}});
  return p;
}

std::vector<GpuAllocation> resolve(const std::vector<PodAllocation>& pods,
                                   const std::vector<ContainerDevices>* allocatable, const SharingFacts& facts,
                                   SharingStats* stats = nullptr) {
  AllocationOptions options;
  return resolve_sharing(gpu_allocations(pods, options), pods, allocatable, facts, options, stats);
}

std::vector<std::string> replicas(const std::string& base, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(base + "::" + std::to_string(i));
  return out;
}

TEST(Sharing, TimeSlicedReplicasAreOneEntryPerContainerWithTheirSummedShare) {
  std::vector<PodAllocation> pods = {
      pod("ml", "a", {{"main", {{"nvidia.com/gpu", {kGpu0 + "::0", kGpu0 + "::1"}}}}}),
      pod("ml", "b", {{"main", {{"nvidia.com/gpu", {kGpu0 + "::3"}}}}}),
      pod("ml", "c", {{"main", {{"nvidia.com/gpu", {kGpu1}}}}}),
  };
  std::vector<ContainerDevices> allocatable = {{"nvidia.com/gpu", replicas(kGpu0, 4)}, {"nvidia.com/gpu", {kGpu1}}};
  auto out = resolve(pods, &allocatable, {});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].pod, "a");
  EXPECT_EQ(out[0].device_id, kGpu0 + "::0," + kGpu0 + "::1");
  EXPECT_EQ(out[0].device.uuid, kGpu0);
  EXPECT_EQ(out[0].share, 0.5);
  EXPECT_EQ(out[0].mode, "time-slicing");
  EXPECT_EQ(out[0].share_basis, "replicas");
  EXPECT_TRUE(out[0].share_known);
  EXPECT_EQ(out[1].share, 0.25);
  EXPECT_EQ(out[1].mode, "time-slicing");
  EXPECT_EQ(out[2].share, 1.0);
  EXPECT_EQ(out[2].mode, "exclusive");
  EXPECT_EQ(out[2].share_basis, "whole");
}

TEST(Sharing, RenamedSharedResourceFallsBackToTheGfdLabelAndElseSaysUnknown) {
  std::vector<PodAllocation> pods = {pod("ml", "a", {{"main", {{"nvidia.com/gpu.shared", {kGpu0 + "::7"}}}}})};
  SharingFacts facts;
  facts.node_labels = {{"nvidia.com/gpu.replicas", "10"}, {"nvidia.com/gpu.sharing-strategy", "time-slicing"}};
  auto out = resolve(pods, nullptr, facts);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].share, 1.0 / 10.0);
  EXPECT_EQ(out[0].mode, "time-slicing");
  EXPECT_TRUE(out[0].share_known);

  // No inventory, no label: the share is not invented.
  SharingStats stats;
  out = resolve(pods, nullptr, {}, &stats);
  EXPECT_FALSE(out[0].share_known);
  EXPECT_EQ(out[0].share, 1.0);
  EXPECT_EQ(stats.unknown_shares, 1u);
  // A label that is not a count is no count.
  facts.node_labels["nvidia.com/gpu.replicas"] = "10; rm -rf";
  EXPECT_FALSE(resolve(pods, nullptr, facts)[0].share_known);
}

TEST(Sharing, MpsNodesSayMps) {
  std::vector<PodAllocation> pods = {
      pod("ml", "a", {{"main", {{"nvidia.com/gpu", {kGpu0 + "::1"}}}}, {"side", {{"nvidia.com/gpu", {kGpu0 + "::2"}}}}})};
  std::vector<ContainerDevices> allocatable = {{"nvidia.com/gpu", replicas(kGpu0, 8)}};
  SharingFacts facts;
  facts.node_labels = {{"nvidia.com/mps.capable", "true"}, {"nvidia.com/gpu.sharing-strategy", "mps"}};
  auto out = resolve(pods, &allocatable, facts);
  ASSERT_EQ(out.size(), 2u);  // per container, never per slot
  for (const auto& a : out) {
    EXPECT_EQ(a.mode, "mps");
    EXPECT_EQ(a.share, 1.0 / 8.0);
  }
}

TEST(Sharing, MigInstancesAndTimeSharedMigInstances) {
  std::vector<PodAllocation> pods = {
      pod("web", "whole", {{"srv", {{"nvidia.com/mig-1g.5gb", {"MIG-" + kGpu1 + "/7/0"}}}}}),
      pod("web", "sliced", {{"srv", {{"nvidia.com/mig-1g.5gb", {kMig + "::0", kMig + "::2"}}}}}),
      pod("web", "gke", {{"srv", {{"nvidia.com/mig-1g.5gb", {"nvidia1/gi2/vgpu0"}}}}}),
  };
  std::vector<ContainerDevices> allocatable = {{"nvidia.com/mig-1g.5gb", replicas(kMig, 4)}};
  SharingFacts facts;
  facts.node_labels = {{"nvidia.com/mig-1g.5gb.replicas", "2"}};
  auto out = resolve(pods, &allocatable, facts);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].pod, "gke");
  EXPECT_EQ(out[0].device.uuid, "nvidia1");
  EXPECT_EQ(out[0].device.mig_instance, "gi2");
  EXPECT_EQ(out[0].share, 0.5);  // from the GFD label: the inventory does not list it
  EXPECT_EQ(out[0].mode, "mig-time-slicing");
  EXPECT_EQ(out[0].device.sharing, Sharing::kMig);
  EXPECT_EQ(out[1].pod, "sliced");
  EXPECT_EQ(out[1].device.uuid, kMig);
  EXPECT_EQ(out[1].share, 0.5);
  EXPECT_EQ(out[1].mode, "mig-time-slicing");
  EXPECT_EQ(out[1].device.sharing, Sharing::kMig);
  EXPECT_EQ(out[2].pod, "whole");
  EXPECT_EQ(out[2].share, 1.0);
  EXPECT_EQ(out[2].mode, "mig");
  EXPECT_EQ(out[2].device.mig_instance, "7/0");
}

// The owners a scheduler's record has once written (managedFields).
FieldOwnership owned(std::map<std::string, std::vector<FieldOwner>> annotations,
                     std::map<std::string, std::vector<FieldOwner>> labels = {}) {
  return {true, std::move(annotations), std::move(labels)};
}

SharingFacts hami_facts(const std::string& record) {
  SharingFacts f;
  f.node_name = "node-1";
  f.node_annotations = {{"hami.io/node-nvidia-register",
                         R"([{"id":")" + kGpu0 + R"(","count":10,"devmem":12000,"devcore":100,"type":"NVIDIA-A10"}])"}};
  PodSharingFacts p{"ml", "frac", "node-1", {}, {}, {"main", "sidecar", "mem"}};
  p.annotations = {{"hami.io/vgpu-devices-allocated", record},
                   {"hami.io/vgpu-devices-to-allocate", ";"},
                   {"hami.io/vgpu-node", "node-1"},
                   {"hami.io/bind-phase", "success"}};
  p.owners = owned({{"hami.io/vgpu-devices-allocated", {{"scheduler", 1000}}}});
  p.container_resources = {{{"nvidia.com/gpucores", "30"}, {"nvidia.com/gpumem", "3000"}}, {}, {{"nvidia.com/gpumem", "3000"}}};
  f.pods[{"ml", "frac"}] = p;
  return f;
}

std::vector<PodAllocation> hami_pods() {
  return {pod("ml", "frac",
              {{"main", {{"nvidia.com/gpu", {kGpu0 + "-3"}}}}, {"sidecar", {}}, {"mem", {{"nvidia.com/gpu", {kGpu0 + "-4"}}}}})};
}

TEST(Sharing, HamiFractionsComeFromTheSchedulersRecord) {
  auto facts = hami_facts(kGpu0 + ",NVIDIA,3000,30:;;" + kGpu0 + ",NVIDIA,3000,0:;");
  SharingStats stats;
  auto out = resolve(hami_pods(), nullptr, facts, &stats);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(stats.refused_annotations, 0u);
  EXPECT_EQ(out[0].container, "main");
  EXPECT_EQ(out[0].device.uuid, kGpu0);
  EXPECT_EQ(out[0].device_id, kGpu0);
  EXPECT_EQ(out[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(out[0].share, 0.3);
  EXPECT_EQ(out[0].share_basis, "cores");
  EXPECT_EQ(out[0].mode, "fraction");
  EXPECT_EQ(out[1].container, "mem");
  EXPECT_EQ(out[1].share, 0.25);  // 3000 of 12000 MiB
  EXPECT_EQ(out[1].share_basis, "memory");
}

TEST(Sharing, HamiRecordsThatCannotBeTrustedAreRefusedWhole) {
  const std::string good = kGpu0 + ",NVIDIA,3000,30:;;" + kGpu0 + ",NVIDIA,3000,0:;";
  auto refused = [&](SharingFacts facts) {
    SharingStats stats;
    auto out = resolve(hami_pods(), nullptr, facts, &stats);
    EXPECT_EQ(stats.refused_annotations, 1u);
    EXPECT_EQ(stats.refused.size(), 1u);
    EXPECT_EQ(out.size(), 2u);
    for (const auto& a : out) {  // the safe default: the whole device each slot is of
      EXPECT_NE(a.mode, "fraction");
      EXPECT_EQ(a.device.uuid, kGpu0);
      EXPECT_EQ(a.share, 1.0);
      EXPECT_EQ(a.share_basis, "refused");
    }
    return stats.refused.empty() ? RefusalReason::kMalformed : stats.refused.front().reason;
  };
  auto not_bound = hami_facts(good);
  not_bound.pods.begin()->second.annotations["hami.io/bind-phase"] = "allocating";
  EXPECT_EQ(refused(not_bound), RefusalReason::kNotBound);
  auto elsewhere = hami_facts(good);
  elsewhere.pods.begin()->second.annotations["hami.io/vgpu-node"] = "node-2";
  EXPECT_EQ(refused(elsewhere), RefusalReason::kNotBound);
  // Another device than the kubelet handed out: a tenant's own annotation.
  EXPECT_EQ(refused(hami_facts(kGpu1 + ",NVIDIA,3000,30:;;" + kGpu1 + ",NVIDIA,3000,0:;")),
            RefusalReason::kForeignDevice);
  // ... or one more device than it was given: the cheat would hold it too.
  EXPECT_EQ(refused(hami_facts(kGpu0 + ",NVIDIA,3000,30:" + kGpu1 + ",NVIDIA,3000,30:;;" + kGpu0 + ",NVIDIA,3000,0:;")),
            RefusalReason::kForeignDevice);
  // Below what the pod asked for (its spec cannot change once created).
  EXPECT_EQ(refused(hami_facts(kGpu0 + ",NVIDIA,3000,1:;;" + kGpu0 + ",NVIDIA,3000,0:;")), RefusalReason::kBelowRequest);
  EXPECT_EQ(refused(hami_facts(kGpu0 + ",NVIDIA,3000,30:;;" + kGpu0 + ",NVIDIA,100,0:;")), RefusalReason::kBelowRequest);
  EXPECT_EQ(refused(hami_facts(kGpu0 + ",NVIDIA,3000,30:;;" + kGpu0 + ",NVIDIA,3000,5:;")), RefusalReason::kBelowRequest);
  // Not written by HAMi's scheduler: the pod's author (or nobody known).
  auto rewritten = hami_facts(good);
  rewritten.pods.begin()->second.owners = owned({{"hami.io/vgpu-devices-allocated", {{"kubectl-annotate", 2000}}}});
  EXPECT_EQ(refused(rewritten), RefusalReason::kNotSchedulerWritten);
  auto shared = hami_facts(good);
  shared.pods.begin()->second.owners.annotations["hami.io/vgpu-devices-allocated"].push_back({"kubectl-edit", 2000});
  EXPECT_EQ(refused(shared), RefusalReason::kNotSchedulerWritten);
  auto stripped = hami_facts(good);
  stripped.pods.begin()->second.owners = {};
  EXPECT_EQ(refused(stripped), RefusalReason::kNotSchedulerWritten);
  auto other_name = hami_facts(good);
  other_name.trust.hami_managers = {"my-hami"};
  EXPECT_EQ(refused(other_name), RefusalReason::kNotSchedulerWritten);
  EXPECT_EQ(refused(hami_facts(kGpu0 + ",NVIDIA,3000,101:;")), RefusalReason::kMalformed);
  refused(hami_facts(kGpu0 + ",NVIDIA,-3000,30:;"));
  refused(hami_facts(kGpu0 + ",NVIDIA,3000:;"));
  refused(hami_facts("GPU-x\n,NVIDIA,3000,30:;"));
  EXPECT_FALSE(parse_hami_allocated(""));
  EXPECT_EQ(parse_hami_allocated(kGpu0 + ",NVIDIA,3000,30:;")->size(), 1u);
  EXPECT_EQ(parse_hami_node_register(kGpu0 + ",10,32768,100,NVIDIA-Tesla V100,0,true:").at(kGpu0), 32768u);
  EXPECT_EQ(hami_slot_device(kGpu0 + "-7"), kGpu0);
  EXPECT_EQ(hami_slot_device(kGpu0), kGpu0);
  EXPECT_EQ(hami_slot_device("GPU-x-7"), "GPU-x-7");
  EXPECT_EQ(hami_slot_device(kGpu0 + "-7a"), kGpu0 + "-7a");
}

SharingFacts kai_facts() {
  SharingFacts f;
  f.node_name = "node-1";
  f.device_memory_mib = {{kGpu1, 8000}};
  f.pods[{"runai-reservation", "runai-reservation-gpu-node-1-x7k2p"}] = {
      "runai-reservation", "runai-reservation-gpu-node-1-x7k2p", "node-1",
      {{"runai-gpu-group", "0f3c1a2e"}}, {{"run.ai/reserve_for_gpu_index", kGpu1}}, {"runai-reservation"}};
  f.pods[{"team-a", "half"}] = {"team-a", "half", "node-1", {{"runai-gpu-group", "0f3c1a2e"}},
                                {{"gpu-fraction", "0.5"}, {"runai-gpu", kGpu1}}, {"train", "logger"}};
  f.pods[{"team-b", "mem"}] = {"team-b", "mem", "node-1", {{"runai-gpu-group", "0f3c1a2e"}},
                               {{"gpu-memory", "2000"}}, {"infer"}};
  f.pods[{"team-c", "cheat"}] = {"team-c", "cheat", "node-1", {{"runai-gpu-group", "0f3c1a2e"}},
                                 {{"gpu-fraction", "0.01e2"}}, {"main"}};
  f.pods[{"team-d", "stranger"}] = {"team-d", "stranger", "node-1", {{"runai-gpu-group", "other"}},
                                    {{"gpu-fraction", "0.1"}}, {"main"}};
  // As KAI leaves them: the author wrote the fraction at creation (t=1000),
  // KAI's binder the group label and GPU index when it bound the pod (t=1005).
  for (auto& [key, p] : f.pods) {
    if (key.first == "runai-reservation") continue;
    p.scheduled_at = 1005;
    p.owners = owned({}, {{"runai-gpu-group", {{"binder", 1005}}}});
    for (const auto& [k, v] : p.annotations)
      p.owners.annotations[k] = {k == "runai-gpu" ? FieldOwner{"binder", 1005} : FieldOwner{"kubectl-create", 1000}};
  }
  return f;
}

// What the kubelet says of kai_facts()'s pods: the reservation pod holds the
// GPU, the fractional pods nothing.
std::vector<PodAllocation> kai_pods() {
  return {
      pod("runai-reservation", "runai-reservation-gpu-node-1-x7k2p",
          {{"runai-reservation", {{"nvidia.com/gpu", {kGpu1}}}}}),
      pod("team-a", "half", {{"train", {}}, {"logger", {}}}),
      pod("team-b", "mem", {{"infer", {}}}),
      pod("team-c", "cheat", {{"main", {}}}),
      pod("team-d", "stranger", {{"main", {}}}),
  };
}

TEST(Sharing, KaiFractionsJoinTheReservationPodsGpuThroughTheGroupLabel) {
  const auto pods = kai_pods();
  SharingStats stats;
  auto out = resolve(pods, nullptr, kai_facts(), &stats);
  ASSERT_EQ(out.size(), 3u);  // the reservation pod is no holder; a pod of no reserved group holds nothing
  EXPECT_EQ(out[0].namespace_name, "team-a");
  EXPECT_EQ(out[0].container, "train");
  EXPECT_EQ(out[0].device.uuid, kGpu1);
  EXPECT_EQ(out[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(out[0].share, 0.5);
  EXPECT_EQ(out[0].mode, "fraction");
  EXPECT_EQ(out[0].share_basis, "fraction");
  EXPECT_EQ(out[1].namespace_name, "team-b");
  EXPECT_EQ(out[1].share, 0.25);  // 2000 of 8000 MiB
  EXPECT_EQ(out[1].share_basis, "memory");
  EXPECT_EQ(out[2].namespace_name, "team-c");  // a record that cannot be read: billed the whole GPU
  EXPECT_TRUE(out[2].share_known);
  EXPECT_EQ(out[2].share, 1.0);
  EXPECT_EQ(out[2].share_basis, "refused");
  EXPECT_EQ(stats.refused_annotations, 1u);
  ASSERT_EQ(stats.refused.size(), 1u);
  EXPECT_EQ(stats.refused[0], (RefusedRecord{"kai", "team-c", "cheat", RefusalReason::kMalformed,
                                             "neither gpu-fraction nor gpu-memory can be read"}));

  for (auto [text, value] : std::vector<std::pair<std::string, double>>{{"0.5", 0.5}, {"1", 1.0}, {"1.0", 1.0},
                                                                      {".25", 0.25}, {"0.125", 0.125}})
    EXPECT_EQ(parse_gpu_fraction(text), value) << text;
  for (std::string bad : {"0", "0.0", "1.5", "2", "-0.5", "0.5 ", "1e-1", "0,5", "", ".", "0.0000001", "NaN"})
    EXPECT_FALSE(parse_gpu_fraction(bad)) << bad;
}

// A tenant that lowers its own gpu-fraction once KAI placed it (0.5 -> 0.01),
// labels itself into another's GPU group, or names a container it does not
// have, is refused and billed the whole GPU; its co-tenant's share stays.
TEST(Sharing, KaiRecordsRewrittenAfterSchedulingAreRefused) {
  const auto pods = kai_pods();  // team-c and team-d are left out of the facts below
  auto attacked = [&](const std::function<void(PodSharingFacts&)>& forge) {
    auto facts = kai_facts();
    facts.pods.erase({"team-c", "cheat"});
    facts.pods.erase({"team-d", "stranger"});
    forge(facts.pods.at({"team-a", "half"}));
    SharingStats stats;
    auto out = resolve(pods, nullptr, facts, &stats);
    EXPECT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].pod, "half");
    EXPECT_EQ(out[0].share, 1.0);
    EXPECT_EQ(out[0].share_basis, "refused");
    EXPECT_EQ(out[0].device.uuid, kGpu1);
    EXPECT_EQ(out[1].share, 0.25);  // the co-tenant's part does not change
    EXPECT_EQ(stats.refused.size(), 1u);
    return stats.refused.empty() ? RefusalReason::kMalformed : stats.refused[0].reason;
  };
  EXPECT_EQ(attacked([](PodSharingFacts& p) {
              p.annotations["gpu-fraction"] = "0.01";
              p.owners.annotations["gpu-fraction"] = {{"kubectl-annotate", 4000}};
            }),
            RefusalReason::kChangedAfterScheduling);
  // kubectl apply again under the creator's own name: its entry's time moves.
  EXPECT_EQ(attacked([](PodSharingFacts& p) {
              p.annotations["gpu-fraction"] = "0.01";
              p.owners.annotations["gpu-fraction"] = {{"kubectl-create", 4000}};
            }),
            RefusalReason::kChangedAfterScheduling);
  EXPECT_EQ(attacked([](PodSharingFacts& p) { p.scheduled_at.reset(); }), RefusalReason::kChangedAfterScheduling);
  EXPECT_EQ(attacked([](PodSharingFacts& p) { p.owners = {}; }), RefusalReason::kNotSchedulerWritten);
  EXPECT_EQ(attacked([](PodSharingFacts& p) { p.owners.labels["runai-gpu-group"] = {{"kubectl-label", 900}}; }),
            RefusalReason::kNotSchedulerWritten);
  // A container it does not have: it still holds the GPU, in its first container.
  EXPECT_EQ(attacked([](PodSharingFacts& p) {
              p.annotations["gpu-fraction-container-name"] = "ghost";
              p.owners.annotations["gpu-fraction-container-name"] = {{"kubectl-create", 1000}};
            }),
            RefusalReason::kUnknownContainer);
  EXPECT_EQ(attacked([](PodSharingFacts& p) { p.annotations["runai-gpu"] = kGpu0; }), RefusalReason::kInconsistent);
  // KAI itself rewriting the fraction later (its managers) is its record.
  auto facts = kai_facts();
  facts.pods.erase({"team-c", "cheat"});
  auto& half = facts.pods.at({"team-a", "half"});
  half.annotations["gpu-fraction"] = "0.75";
  half.owners.annotations["gpu-fraction"] = {{"binder", 4000}};
  SharingStats stats;
  auto out = resolve(pods, nullptr, facts, &stats);
  EXPECT_EQ(out[0].share, 0.75);
  EXPECT_EQ(stats.refused.size(), 0u);
}

// The reservation namespace is configured (kubernetes.kai_reservation_namespace):
// reservation pods there count, and a look-alike in the default one, which
// tenants could then create, holds nothing for the group.
TEST(Sharing, KaiReservationsCountOnlyInTheConfiguredNamespace) {
  SharingFacts facts = kai_facts();
  facts.kai_reservation_namespace = "kai-reservation";
  auto reservation = facts.pods.extract({"runai-reservation", "runai-reservation-gpu-node-1-x7k2p"});
  reservation.key() = {"kai-reservation", "gpu-reservation-7"};
  reservation.mapped().namespace_name = "kai-reservation";
  reservation.mapped().name = "gpu-reservation-7";
  facts.pods.insert(std::move(reservation));
  const std::vector<PodAllocation> pods = {
      pod("kai-reservation", "gpu-reservation-7", {{"runai-reservation", {{"nvidia.com/gpu", {kGpu1}}}}}),
      pod("team-a", "half", {{"train", {}}, {"logger", {}}}),
  };
  auto out = resolve(pods, nullptr, facts);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].namespace_name, "team-a");
  EXPECT_EQ(out[0].share, 0.5);
  EXPECT_EQ(out[0].mode, "fraction");

  // The same pods with the default namespace configured: no reservation is
  // trusted, so nobody gets a fraction of the device.
  facts.kai_reservation_namespace = "runai-reservation";
  out = resolve(pods, nullptr, facts);
  for (const auto& a : out) EXPECT_NE(a.mode, "fraction") << a.namespace_name << "/" << a.pod;
}

ClaimDevice claim(const std::string& claim_name, const std::string& device, const std::string& cdi) {
  ClaimDevice d{"gpu.nvidia.com", "node-1", device, {}, claim_name, "ml"};
  if (!cdi.empty()) d.cdi_devices.push_back(cdi);
  return d;
}

TEST(Sharing, DraClaimsSharedByPodsSplitEvenlyAndUuidsComeFromResourceSlices) {
  std::vector<PodAllocation> pods;
  for (auto [p, c] : std::vector<std::pair<std::string, std::string>>{{"a", "main"}, {"a", "side"}, {"b", "main"}}) {
    PodAllocation pa{p, "ml", {{c, {}, {claim("shared", "gpu-0", "k8s.gpu.nvidia.com/gpu=" + kGpu0)}}}};
    pods.push_back(pa);
  }
  pods.push_back({"solo", "ml", {{"main", {}, {claim("own", "gpu-1", "")}}}});
  SharingFacts facts;
  facts.slice_devices = {{"gpu.nvidia.com", "node-1", "gpu-1", kGpu1, false}};
  auto out = resolve(pods, nullptr, facts);
  ASSERT_EQ(out.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].share, 1.0 / 3.0);
    EXPECT_EQ(out[i].mode, "dra-shared");
    EXPECT_EQ(out[i].device.uuid, kGpu0);
    EXPECT_EQ(out[i].share_basis, "claim");
  }
  EXPECT_EQ(out[3].pod, "solo");
  EXPECT_EQ(out[3].device.uuid, kGpu1);  // from the ResourceSlice
  EXPECT_EQ(out[3].share, 1.0);
  EXPECT_EQ(out[3].mode, "dra");
}

TEST(Sharing, ResourceSlicesOfV1AndV1beta1) {
  auto slice = nlohmann::json::parse(R"J({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
    "metadata":{"name":"node-1-gpu.nvidia.com-abcde"},
    "spec":{"driver":"gpu.nvidia.com","nodeName":"node-1","pool":{"name":"node-1","generation":1,"resourceSliceCount":1},
      "devices":[{"name":"gpu-0","attributes":{"type":{"string":"gpu"},"uuid":{"string":"GPU-aaaaaaaa-0000-4000-8000-000000000000"},
                   "index":{"int":0}}},
                 {"name":"gpu-0-mig-1g10gb-0","attributes":{"type":{"string":"mig"},
                   "uuid":{"string":"MIG-dddddddd-3333-4333-8333-333333333333"}}},
                 {"name":"bad","attributes":{"uuid":{"string":"GPU-$(reboot)"}}}]}})J");
  auto devices = parse_resource_slice(slice);
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices[0], (SliceDevice{"gpu.nvidia.com", "node-1", "gpu-0", kGpu0, false}));
  EXPECT_EQ(devices[1], (SliceDevice{"gpu.nvidia.com", "node-1", "gpu-0-mig-1g10gb-0", kMig, true}));
  EXPECT_EQ(devices[2].uuid, "");
  auto beta = nlohmann::json::parse(R"({"metadata":{"name":"s"},"spec":{"driver":"gpu.nvidia.com","pool":{"name":"p"},
    "devices":[{"name":"gpu-0","basic":{"attributes":{"uuid":{"string":"GPU-aaaaaaaa-0000-4000-8000-000000000000"}}}}]}})");
  EXPECT_EQ(parse_resource_slice(beta).at(0).uuid, kGpu0);
}

}  // namespace
}  // namespace gpuledger::kubernetes
