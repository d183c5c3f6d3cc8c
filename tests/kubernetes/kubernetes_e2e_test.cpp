// End to end, as root with the real BPF programs: tenants run the CUDA driver
// simulator in pod-shaped cgroups; a test API server (HTTPS, own CA, bearer
// token) names their pods, a test kubelet (gRPC on a unix socket) says which
// GPUs they hold, and /metrics must carry namespace, pod, container and team.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>

#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "export/http_server.h"
#include "exposition_parser.h"
#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/kubernetes_metrics.h"
#include "kubernetes/pod_resources_client.h"
#include "kubernetes/team_namer.h"
#include "node/served_content.h"
#include "tenant_harness.h"
#include "test_api_server.h"
#include "test_kubelet.h"

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using simulation::ScopedCgroup;

constexpr char kUidA[] = "a0000000-0000-4000-8000-00000000000a";
constexpr char kUidB[] = "b0000000-0000-4000-8000-00000000000b";
constexpr char kUidC[] = "c0000000-0000-4000-8000-00000000000c";
constexpr char kUidD[] = "d0000000-0000-4000-8000-00000000000d";
constexpr char kUidE[] = "e0000000-0000-4000-8000-00000000000e";
const std::string kHexA(64, 'a'), kHexB(64, 'b'), kHexC(64, 'c'), kHexD(64, 'd'), kHexE(64, 'e');
const std::string kGpu0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
const std::string kGpu1 = "GPU-bbbbbbbb-1111-4111-8111-111111111111";
const std::string kGpu2 = "GPU-cccccccc-2222-4222-8222-222222222222";

std::string underscored(std::string uid) {
  for (char& c : uid)
    if (c == '-') c = '_';
  return uid;
}

class KubernetesEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!bpf_unavailable_reason().empty()) return;
    char tmpl[] = "/tmp/gpuledger-k8s-e2e-XXXXXX";
    dir_ = new std::string(::mkdtemp(tmpl));

    api_ = new TestApiServer(TestApiServer::Options{});
    api_->start();
    api_->upsert_namespace("ml", {{"team", "vision"}});
    api_->upsert_namespace("web", {});
    api_->upsert_pod(TestApiServer::make_pod(kUidA, "ml", "trainer-0", "node-1", {{"team", "nlp"}},
                                             {{"main", "containerd://" + kHexA}}));
    api_->upsert_pod(TestApiServer::make_pod(kUidB, "ml", "trainer-1", "node-1", {},
                                             {{"worker", "cri-o://" + kHexB}}));
    api_->upsert_pod(TestApiServer::make_pod(kUidC, "web", "api-0", "node-1", {}, {{"srv", "containerd://" + kHexC}}));

    kubelet_ = new TestKubelet(*dir_ + "/kubelet.sock");
    v1::ListPodResourcesResponse r;
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "ml", "trainer-0"), "main"),
                             "nvidia.com/gpu", {kGpu0 + "::0"});
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "ml", "trainer-1"), "worker"),
                             "nvidia.com/gpu", {kGpu0 + "::1"});
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "web", "api-0"), "srv"),
                             "nvidia.com/mig-1g.5gb", {"MIG-" + kGpu1 + "/1/0"});
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "research", "solo"), "train"),
                             "nvidia.com/gpu", {kGpu2});
    kubelet_->set_list(r);

    config::AgentConfig config = config::parse_agent_config(
        "teams:\n  - {match: systemd_unit, pattern: 'etl-*.service', team: data}\n", "e2e");
    directory_ = new std::shared_ptr<kubernetes::PodDirectory>(
        std::make_shared<kubernetes::PodDirectory>(std::chrono::minutes(10)));
    kubernetes::KubernetesOptions ko;
    ko.cluster = kubernetes::load_kubeconfig(api_->write_kubeconfig(*dir_));
    ko.node_name = "node-1";
    ko.initial_backoff = std::chrono::milliseconds(20);
    ko.max_backoff = std::chrono::milliseconds(100);
    metadata_ = new kubernetes::KubernetesMetadata(ko, *directory_);
    metadata_->start();
    pod_resources_ = new kubernetes::PodResourcesMonitor(kubelet_->socket_path(), {}, std::chrono::milliseconds(100));
    pod_resources_->start();

    attribution::AttributionOptions options;
    options.cuda_libs = {kSimLib};
    options.discover = false;
    options.classifier.cgroup_roots = {test_cgroup("")};  // the tenants' hierarchy starts there
    options.namer = std::make_shared<kubernetes::TeamNamer>(*directory_, config.team_rule, config.teams);
    agent_ = new attribution::AttributionPlane(options);
    agent_->start();
    metrics_ = new kubernetes::KubernetesMetrics(*directory_, config.team_rule, metadata_, pod_resources_);
    server_ = new exporter::HttpServer(node::served_content(*agent_));
    server_->add_contributor(metrics_);
    port_ = server_->start("127.0.0.1", 0);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete agent_;
    delete metrics_;
    delete pod_resources_;
    delete metadata_;
    delete directory_;
    delete kubelet_;
    delete api_;
    if (dir_) fs::remove_all(*dir_);
    delete dir_;
    server_ = nullptr;
    agent_ = nullptr;
    std::error_code ec;
    fs::remove(mounts().v2 + test_cgroup(""), ec);
  }
  void SetUp() override {
    GL_REQUIRE_BPF();
    ASSERT_TRUE(eventually([] { return metadata_->pod_stats().synced && metadata_->namespace_stats()->synced; },
                           std::chrono::seconds(10)));
  }

  static std::vector<Sample> scrape() {
    httplib::Client client("127.0.0.1", port_);
    auto res = client.Get("/metrics");
    if (!res || res->status != 200) return {};
    return parse_exposition(res->body);
  }
  static double value(const std::vector<Sample>& s, const std::string& name,
                      const std::map<std::string, std::string>& labels) {
    return sample_value(s, name, labels).value_or(-1);
  }

  static inline std::string* dir_ = nullptr;
  static inline TestApiServer* api_ = nullptr;
  static inline TestKubelet* kubelet_ = nullptr;
  static inline std::shared_ptr<kubernetes::PodDirectory>* directory_ = nullptr;
  static inline kubernetes::KubernetesMetadata* metadata_ = nullptr;
  static inline kubernetes::PodResourcesMonitor* pod_resources_ = nullptr;
  static inline kubernetes::KubernetesMetrics* metrics_ = nullptr;
  static inline attribution::AttributionPlane* agent_ = nullptr;
  static inline exporter::HttpServer* server_ = nullptr;
  static inline int port_ = 0;
};

TEST_F(KubernetesEndToEnd, TenantsInPodShapedCgroupsCarryNamespacePodContainerAndTeam) {
  ScopedCgroup a(mounts().v2, test_cgroup("/kubepods/burstable/pod" + std::string(kUidA) + "/" + kHexA));
  ScopedCgroup b(mounts().v2, test_cgroup("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
                                          underscored(kUidB) + ".slice/crio-" + kHexB + ".scope"));
  ScopedCgroup d(mounts().v2, test_cgroup("/system.slice/etl-nightly.service"));
  ASSERT_EQ(run_tenant({a.dir()}, "init; launch 1 1 1 4 1 1 x5; alloc 4096; free").exit_code, 0);
  ASSERT_EQ(run_tenant({b.dir()}, "init; launch 1 1 1 4 1 1 x3").exit_code, 0);
  ASSERT_EQ(run_tenant({d.dir()}, "init; launch 1 1 1 1 1 1 x2").exit_code, 0);

  auto s = scrape();
  EXPECT_EQ(value(s, "gpuledger_cuda_kernel_launches_total",
                  {{"workload", std::string("k8s/") + kUidA + "/" + kHexA}, {"namespace", "ml"}, {"pod", "trainer-0"},
                   {"container", "main"}, {"team", "vision"}}),
            5);
  EXPECT_EQ(value(s, "gpuledger_cuda_kernel_launches_total",
                  {{"workload", std::string("k8s/") + kUidB + "/" + kHexB}, {"namespace", "ml"}, {"pod", "trainer-1"},
                   {"container", "worker"}, {"team", "vision"}}),
            3);
  EXPECT_EQ(value(s, "gpuledger_cuda_kernel_launches_total",
                  {{"workload", "systemd/etl-nightly.service"}, {"namespace", ""}, {"pod", ""}, {"container", ""},
                   {"team", "data"}}),
            2);
  EXPECT_EQ(value(s, "gpuledger_cuda_memory_allocated_bytes_total",
                  {{"pod", "trainer-0"}, {"container", "main"}, {"team", "vision"}}),
            4096);
  // trainer-0's own label says team nlp, its namespace's team vision: the
  // namespace's owner decides, and the forged label is counted.
  EXPECT_EQ(value(s, "gpuledger_team_label_conflicts", {}), 1);
  EXPECT_EQ(value(s, "gpuledger_team_label_conflicts_total", {}), 1);
}

TEST_F(KubernetesEndToEnd, PodDeletedMidRunKeepsItsCountersAndNames) {
  ScopedCgroup c(mounts().v2, test_cgroup("/kubepods/pod" + std::string(kUidC) + "/" + kHexC));
  auto child = start_interactive_tenant({c.dir()}, "init; launch 1 1 1 1 1 1 x2; print-ready; wait-stdin; "
                                                   "launch 1 1 1 1 1 1 x5");
  await_ready(*child);
  const std::string id = std::string("k8s/") + kUidC + "/" + kHexC;
  auto named = [&](double launches) {
    return value(scrape(), "gpuledger_cuda_kernel_launches_total",
                 {{"workload", id}, {"namespace", "web"}, {"pod", "api-0"}, {"container", "srv"}, {"team", "web"}}) ==
           launches;
  };
  ASSERT_TRUE(eventually([&] { return named(2); }));

  api_->delete_pod(kUidC);
  ASSERT_TRUE(eventually([&] {
    auto p = (*directory_)->find(kUidC, kHexC);
    return p && p->deleted;
  }));
  finish_interactive_tenant(*child);
  // Every launch, before and after the deletion, on the same pod and names.
  EXPECT_TRUE(eventually([&] { return named(7); })) << "launches after deletion lost or renamed";
}

TEST_F(KubernetesEndToEnd, ReplicasMigAndExclusiveGpusInTheAllocationMetric) {
  ASSERT_TRUE(eventually([] { return pod_resources_->state().up; }));
  auto s = scrape();
  const std::string m = "gpuledger_gpu_allocation_info";
  EXPECT_EQ(value(s, m, {{"namespace", "ml"}, {"pod", "trainer-0"}, {"container", "main"}, {"team", "vision"},
                         {"UUID", kGpu0}, {"resource", "nvidia.com/gpu"}, {"device_id", kGpu0 + "::0"},
                         {"sharing", "replicas"}}),
            1);
  EXPECT_EQ(value(s, m, {{"namespace", "ml"}, {"pod", "trainer-1"}, {"container", "worker"}, {"team", "vision"},
                         {"UUID", kGpu0}, {"device_id", kGpu0 + "::1"}, {"sharing", "replicas"}}),
            1);
  EXPECT_EQ(value(s, m, {{"namespace", "web"}, {"pod", "api-0"}, {"container", "srv"}, {"team", "web"},
                         {"UUID", kGpu1}, {"resource", "nvidia.com/mig-1g.5gb"}, {"sharing", "mig"}}),
            1);
  EXPECT_EQ(value(s, m, {{"namespace", "research"}, {"pod", "solo"}, {"container", "train"}, {"team", "research"},
                         {"UUID", kGpu2}, {"sharing", "exclusive"}}),
            1);
  EXPECT_EQ(value(s, "gpuledger_pod_resources_up", {}), 1);
  EXPECT_EQ(value(s, "gpuledger_kubernetes_api_up", {{"resource", "pods"}}), 1);
}

TEST_F(KubernetesEndToEnd, ApiServerGoingAwayAndComingBackLosesNothing) {
  // A pod known before the API server goes away: its names stay meanwhile.
  api_->upsert_pod(TestApiServer::make_pod(kUidE, "web", "known-0", "node-1", {{"team", "edge"}},
                                           {{"main", "containerd://" + kHexE}}));
  ASSERT_TRUE(eventually([] { return (*directory_)->find(kUidE, kHexE).has_value(); }));
  ScopedCgroup ecg(mounts().v2, test_cgroup("/kubepods/pod" + std::string(kUidE) + "/" + kHexE));
  ASSERT_EQ(run_tenant({ecg.dir()}, "init; launch 1 1 1 1 1 1 x3").exit_code, 0);
  const std::string known = std::string("k8s/") + kUidE + "/" + kHexE;

  int port = api_->port();
  api_->stop();
  ASSERT_TRUE(eventually([] { return !metadata_->pod_stats().up; }));
  // A pod scheduled while the agent cannot see the API: counted under its UID meanwhile.
  api_->upsert_pod(TestApiServer::make_pod(kUidD, "ml", "late-0", "node-1", {}, {{"main", "containerd://" + kHexD}}));
  ScopedCgroup dcg(mounts().v2, test_cgroup("/kubepods/besteffort/pod" + std::string(kUidD) + "/" + kHexD));
  ASSERT_EQ(run_tenant({dcg.dir()}, "init; launch 1 1 1 1 1 1 x4").exit_code, 0);
  const std::string id = std::string("k8s/") + kUidD + "/" + kHexD;
  auto s = scrape();
  EXPECT_EQ(value(s, "gpuledger_cuda_kernel_launches_total", {{"workload", id}, {"pod", ""}, {"team", ""}}), 4);
  EXPECT_EQ(value(s, "gpuledger_kubernetes_api_up", {{"resource", "pods"}}), 0);
  EXPECT_EQ(value(s, "gpuledger_cuda_kernel_launches_total",
                  {{"workload", known}, {"namespace", "web"}, {"pod", "known-0"}, {"container", "main"},
                   {"team", "edge"}}),
            3);

  api_->start(port);
  EXPECT_TRUE(eventually(
      [&] {
        return value(scrape(), "gpuledger_cuda_kernel_launches_total",
                     {{"workload", id}, {"namespace", "ml"}, {"pod", "late-0"}, {"container", "main"},
                      {"team", "vision"}}) == 4;
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(value(scrape(), "gpuledger_kubernetes_api_up", {{"resource", "pods"}}), 1);
}

}  // namespace
}  // namespace gpuledger::testing
