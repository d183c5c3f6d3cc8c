// Tenants that rewrite their own scheduler records, through the real sources
// (an HTTPS test API server, a gRPC test kubelet, the agent's reflectors and
// Pod Resources monitor): a HAMi record lowered from 50 % to 1 % of the cores
// (with and without a forged manager name), one that also names a GPU the
// kubelet never gave the container, and a KAI gpu-fraction lowered from 0.5 to
// 0.01. Each is refused, counted, billed the whole device, and the co-tenant's
// bill for the same work never rises (ledger/window_split.h decides the bill).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/kubernetes_metrics.h"
#include "kubernetes/pod_resources_client.h"
#include "ledger/window_split.h"
#include "poll.h"
#include "scheduler_records.h"
#include "test_api_server.h"
#include "test_kubelet.h"

namespace gpuledger::kubernetes {
namespace {
namespace fs = std::filesystem;
using testing::managed_by;
using testing::TestApiServer;
using testing::TestKubelet;

const std::string kHamiGpu = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
const std::string kOtherGpu = "GPU-bbbbbbbb-1111-4111-8111-111111111111";  // held whole by "victim"
const std::string kKaiGpu = "GPU-cccccccc-2222-4222-8222-222222222222";
const std::string kCreated = "2026-01-01T10:00:00Z", kScheduled = "2026-01-01T10:00:02Z",
                  kLater = "2026-01-01T11:30:00Z";

nlohmann::json base_pod(const std::string& ns, const std::string& name, const std::string& container) {
  auto p = TestApiServer::make_pod("uid-" + name, ns, name, "node-1", {}, {});
  p["spec"]["containers"] = {{{"name", container}, {"image", "trainer"}}};
  testing::set_scheduled(p, kScheduled);
  return p;
}

// A HAMi pod asking for 50 % of a GPU's cores, as HAMi's scheduler left it.
nlohmann::json hami_pod(const std::string& name, const std::string& record) {
  auto p = base_pod("ml", name, "main");
  p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "50"}}}};
  p["metadata"]["annotations"] = {{"hami.io/vgpu-devices-allocated", record},
                                  {"hami.io/vgpu-node", "node-1"},
                                  {"hami.io/bind-phase", "success"}};
  testing::set_managed_fields(p, {managed_by("kubectl-create", kCreated, {}),
                                  managed_by("scheduler", kCreated, {"hami.io/vgpu-devices-allocated", "hami.io/vgpu-node"}),
                                  managed_by("nvidia-device-plugin", kScheduled, {"hami.io/bind-phase"})});
  return p;
}

// A KAI pod with its author's gpu-fraction, in the GPU group KAI put it in.
nlohmann::json kai_pod(const std::string& ns, const std::string& name, const std::string& fraction) {
  auto p = base_pod(ns, name, "train");
  p["metadata"]["labels"] = {{"runai-gpu-group", "g-7f3a"}};
  p["metadata"]["annotations"] = {{"gpu-fraction", fraction}};
  testing::set_managed_fields(p, {managed_by("kube-controller-manager", kCreated, {"gpu-fraction"}),
                                  managed_by("binder", kScheduled, {}, {"runai-gpu-group"})});
  return p;
}

struct Cluster {
  std::string dir;
  TestApiServer api{TestApiServer::Options{}};
  std::unique_ptr<TestKubelet> kubelet;
  std::shared_ptr<PodDirectory> directory = std::make_shared<PodDirectory>(std::chrono::minutes(10));
  std::unique_ptr<KubernetesMetadata> metadata;
  std::unique_ptr<PodResourcesMonitor> monitor;

  Cluster() {
    char tmpl[] = "/tmp/gpuledger-forged-XXXXXX";
    dir = ::mkdtemp(tmpl);
    api.start();
    api.upsert_node({{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-1"}, {"uid", "n1"}}}});
    const std::string honest = kHamiGpu + ",NVIDIA,12000,50:;";
    api.upsert_pod(hami_pod("hami-honest", honest));
    api.upsert_pod(hami_pod("hami-cheat", honest));
    api.upsert_pod(base_pod("ml", "victim", "main"));
    auto reservation = base_pod("runai-reservation", "runai-reservation-gpu-node-1-p4x2z", "runai-reservation");
    reservation["metadata"]["labels"] = {{"runai-gpu-group", "g-7f3a"}};
    api.upsert_pod(reservation);
    api.upsert_pod(kai_pod("team-a", "kai-honest", "0.5"));
    api.upsert_pod(kai_pod("team-b", "kai-cheat", "0.5"));

    kubelet = std::make_unique<TestKubelet>(dir + "/kubelet.sock");
    v1::ListPodResourcesResponse list;
    auto add = [&](const std::string& ns, const std::string& pod, const std::string& c, std::vector<std::string> ids) {
      auto* container = TestKubelet::add_container(TestKubelet::add_pod(list, ns, pod), c);
      if (!ids.empty()) TestKubelet::add_devices(container, "nvidia.com/gpu", ids);
    };
    add("ml", "hami-honest", "main", {kHamiGpu + "-0"});
    add("ml", "hami-cheat", "main", {kHamiGpu + "-1"});
    add("ml", "victim", "main", {kOtherGpu});
    add("runai-reservation", "runai-reservation-gpu-node-1-p4x2z", "runai-reservation", {kKaiGpu});
    add("team-a", "kai-honest", "train", {});
    add("team-b", "kai-cheat", "train", {});
    kubelet->set_list(list);

    KubernetesOptions ko;
    ko.cluster = load_kubeconfig(api.write_kubeconfig(dir));
    ko.node_name = "node-1";
    ko.initial_backoff = std::chrono::milliseconds(50);
    metadata = std::make_unique<KubernetesMetadata>(ko, directory);
    metadata->start();
    monitor = std::make_unique<PodResourcesMonitor>(dir + "/kubelet.sock", AllocationOptions{}, std::chrono::seconds(60));
    monitor->set_sharing_facts([this] { return metadata->sharing_facts(); });
  }
  ~Cluster() {
    metadata->stop();
    fs::remove_all(dir);
  }

  // Polls once the API server's change is seen, and returns the allocations.
  std::vector<GpuAllocation> poll_when(const std::function<bool(const SharingFacts&)>& seen) {
    EXPECT_TRUE(testing::poll_until([&] { return seen(metadata->sharing_facts()); }));
    monitor->poll_now();
    auto st = monitor->state();
    EXPECT_TRUE(st.up) << st.last_error;
    return st.allocations;
  }
  std::string annotation(const SharingFacts& f, const std::string& ns, const std::string& pod, const std::string& key) {
    auto it = f.pods.find({ns, pod});
    return it == f.pods.end() ? "" : sharing_value(it->second.annotations, key);
  }
  std::string metrics() const {
    KubernetesMetrics m(directory, {}, metadata.get(), monitor.get());
    metrics::ExpositionWriter out;
    m.write_metrics(out);
    return out.text();
  }
};

const GpuAllocation* held(const std::vector<GpuAllocation>& allocations, const std::string& pod) {
  for (const auto& a : allocations)
    if (a.pod == pod) return &a;
  return nullptr;
}

// One window of a GPU whose holders did the same work: what `pod` pays, in
// micro-units of a 1,000,000 window, under a cost policy.
int64_t bill(const std::vector<GpuAllocation>& allocations, const std::string& uuid, const std::string& pod,
             ledger::CostPolicy policy) {
  ledger::WindowInput in;
  in.cost_micros = 1'000'000;
  in.window_seconds = 60;
  in.device_busy_fraction = 0.6;
  in.cost_policy = policy;
  for (const auto& a : allocations)
    if (a.device.uuid == uuid) {
      in.holders.push_back({a.pod, a.share, a.share_known});
      in.activity[a.pod].busy_seconds = 18;  // the same real work
      in.activity[a.pod].launches = 1000;
    }
  int64_t total = 0;
  for (const auto& c : ledger::split_window(in).charges)
    if (c.account == pod) total += c.micros;
  return total;
}

constexpr ledger::CostPolicy kPolicies[] = {ledger::CostPolicy::kUsage, ledger::CostPolicy::kAllocated,
                                            ledger::CostPolicy::kBlend};

TEST(ForgedRecords, TenantsThatRewriteTheirSchedulerRecordsPayNoLessAndTheirCoTenantsNoMore) {
  Cluster c;
  auto honest = c.poll_when([](const SharingFacts& f) { return f.pods.size() == 6; });
  ASSERT_NE(held(honest, "hami-cheat"), nullptr);
  EXPECT_EQ(held(honest, "hami-cheat")->share, 0.5);
  EXPECT_EQ(held(honest, "hami-honest")->share, 0.5);
  EXPECT_EQ(held(honest, "kai-cheat")->share, 0.5);
  EXPECT_EQ(held(honest, "kai-honest")->share, 0.5);
  EXPECT_EQ(c.monitor->state().sharing.refused_annotations, 0u);
  std::map<ledger::CostPolicy, int64_t> hami_before, kai_before, victim_before;
  for (auto p : kPolicies) {
    hami_before[p] = bill(honest, kHamiGpu, "hami-honest", p);
    kai_before[p] = bill(honest, kKaiGpu, "kai-honest", p);
    victim_before[p] = bill(honest, kOtherGpu, "victim", p);
    EXPECT_EQ(hami_before[p], 500'000);  // same work, same share: half
  }

  auto expect_no_gain = [&](const std::vector<GpuAllocation>& now, const std::string& cheat, const std::string& gpu) {
    const auto* a = held(now, cheat);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->device.uuid, gpu);
    EXPECT_EQ(a->share, 1.0);  // the safe default: the whole device
    EXPECT_EQ(a->share_basis, "refused");
    for (auto p : kPolicies) {
      const auto& before = gpu == kHamiGpu ? hami_before : kai_before;
      const std::string co_tenant = gpu == kHamiGpu ? "hami-honest" : "kai-honest";
      EXPECT_LE(bill(now, gpu, co_tenant, p), before.at(p)) << ledger::to_string(p);
      EXPECT_GE(bill(now, gpu, cheat, p), 1'000'000 - before.at(p)) << ledger::to_string(p);
      EXPECT_EQ(bill(now, kOtherGpu, "victim", p), victim_before.at(p));
    }
    for (const auto& x : now) EXPECT_FALSE(x.pod == cheat && x.device.uuid == kOtherGpu) << "the cheat holds another GPU";
  };

  // 1. HAMi, 50 -> 1 % of the cores with kubectl annotate: not the scheduler's.
  auto forged = hami_pod("hami-cheat", kHamiGpu + ",NVIDIA,12000,1:;");
  auto managed = forged["metadata"]["managedFields"];
  managed[1]["fieldsV1"]["f:metadata"]["f:annotations"].erase("f:hami.io/vgpu-devices-allocated");
  managed.push_back(managed_by("kubectl-annotate", kLater, {"hami.io/vgpu-devices-allocated"}));
  forged["metadata"]["managedFields"] = managed;
  c.api.upsert_pod(forged);
  auto now = c.poll_when([&](const SharingFacts& f) {
    return c.annotation(f, "ml", "hami-cheat", "hami.io/vgpu-devices-allocated").find(",1:") != std::string::npos;
  });
  expect_no_gain(now, "hami-cheat", kHamiGpu);
  EXPECT_EQ(c.monitor->state().sharing.refused[0].reason, RefusalReason::kNotSchedulerWritten);

  // 2. The same with managedFields forged to name HAMi's scheduler: the pod
  // spec (immutable) still asks for 50 %.
  c.api.upsert_pod(hami_pod("hami-cheat", kHamiGpu + ",NVIDIA,12000,1:;"));
  now = c.poll_when([&](const SharingFacts& f) {
    auto it = f.pods.find({"ml", "hami-cheat"});
    return it != f.pods.end() && it->second.owners.annotations.at("hami.io/vgpu-devices-allocated")[0].manager == "scheduler";
  });
  expect_no_gain(now, "hami-cheat", kHamiGpu);
  EXPECT_EQ(c.monitor->state().sharing.refused[0].reason, RefusalReason::kBelowRequest);

  // 3. A record that also names the victim's GPU, which the kubelet never gave it.
  c.api.upsert_pod(hami_pod("hami-cheat", kHamiGpu + ",NVIDIA,12000,50:" + kOtherGpu + ",NVIDIA,12000,50:;"));
  now = c.poll_when([&](const SharingFacts& f) {
    return c.annotation(f, "ml", "hami-cheat", "hami.io/vgpu-devices-allocated").find(kOtherGpu) != std::string::npos;
  });
  expect_no_gain(now, "hami-cheat", kHamiGpu);
  EXPECT_EQ(c.monitor->state().sharing.refused[0].reason, RefusalReason::kForeignDevice);

  // 4. KAI, gpu-fraction 0.5 -> 0.01 after KAI placed it (the HAMi cheat mends its record).
  c.api.upsert_pod(hami_pod("hami-cheat", kHamiGpu + ",NVIDIA,12000,50:;"));
  auto kai = kai_pod("team-b", "kai-cheat", "0.01");
  kai["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:annotations"].erase("f:gpu-fraction");
  kai["metadata"]["managedFields"].push_back(managed_by("kubectl-annotate", kLater, {"gpu-fraction"}));
  c.api.upsert_pod(kai);
  now = c.poll_when([&](const SharingFacts& f) {
    return c.annotation(f, "team-b", "kai-cheat", "gpu-fraction") == "0.01" &&
           c.annotation(f, "ml", "hami-cheat", "hami.io/vgpu-devices-allocated").find(kOtherGpu) == std::string::npos;
  });
  expect_no_gain(now, "kai-cheat", kKaiGpu);
  EXPECT_EQ(held(now, "hami-cheat")->share, 0.5);  // mended: trusted again
  auto st = c.monitor->state();
  ASSERT_EQ(st.sharing.refused.size(), 1u);
  EXPECT_EQ(st.sharing.refused[0].reason, RefusalReason::kChangedAfterScheduling);

  // Each refusal counted once, by reason, however many polls saw it.
  c.monitor->poll_now();
  auto text = c.metrics();
  for (const char* reason : {"not_scheduler_written", "below_request", "foreign_device"})
    EXPECT_NE(text.find("gpuledger_gpu_sharing_refused_records_total{scheduler=\"hami\",reason=\"" + std::string(reason) +
                        "\"} 1\n"),
              std::string::npos)
        << reason << "\n" << text;
  EXPECT_NE(text.find("gpuledger_gpu_sharing_refused_records_total{scheduler=\"kai\",reason=\"changed_after_scheduling\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpuledger_gpu_sharing_untrusted_records 1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuledger::kubernetes
