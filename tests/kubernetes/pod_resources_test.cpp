// GPU allocation from a real gRPC kubelet (Pod Resources API v1) on a unix socket.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <thread>

#include <filesystem>

#include "exposition_parser.h"
#include "kubernetes/kubernetes_metrics.h"
#include "kubernetes/pod_resources_client.h"
#include "poll.h"
#include "test_kubelet.h"

namespace gpuledger::kubernetes {
namespace {
namespace fs = std::filesystem;
using testing::TestKubelet;

const std::string kGpu0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
const std::string kGpu1 = "GPU-bbbbbbbb-1111-4111-8111-111111111111";
const std::string kGpu2 = "GPU-cccccccc-2222-4222-8222-222222222222";

class PodResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuledger-kubelet-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    socket_ = dir_ + "/kubelet.sock";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static v1::ListPodResourcesResponse node_pods() {
    v1::ListPodResourcesResponse r;
    // Two pods on time-sliced replicas of one GPU.
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "ml", "a"), "main"),
                             "nvidia.com/gpu", {kGpu0 + "::0"});
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "ml", "b"), "main"),
                             "nvidia.com/gpu", {kGpu0 + "::3"});
    // A MIG instance, and an exclusive GPU next to a CPU-only container.
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "web", "infer"), "srv"),
                             "nvidia.com/mig-1g.5gb", {"MIG-" + kGpu1 + "/2/0"});
    auto* train = TestKubelet::add_pod(r, "research", "train");
    TestKubelet::add_devices(TestKubelet::add_container(train, "trainer"), "nvidia.com/gpu", {kGpu2});
    TestKubelet::add_container(train, "logger")->add_cpu_ids(3);
    TestKubelet::add_devices(TestKubelet::add_container(train, "nic"), "example.com/nic", {"eth9"});
    // DRA.
    auto* dra = TestKubelet::add_container(TestKubelet::add_pod(r, "dra", "claimer"), "main");
    auto* dyn = dra->add_dynamic_resources();
    dyn->set_claim_name("gpu-claim");
    dyn->set_claim_namespace("dra");
    auto* cr = dyn->add_claim_resources();
    cr->set_driver_name("gpu.nvidia.com");
    cr->set_pool_name("node-1");
    cr->set_device_name("gpu-1");
    cr->add_cdi_devices()->set_name("k8s.gpu.nvidia.com/gpu=" + kGpu1);
    return r;
  }

  std::string dir_, socket_;
};

TEST_F(PodResourcesTest, AllocationOfReplicasMigExclusiveAndDraFromARealKubelet) {
  TestKubelet kubelet(socket_);
  kubelet.set_list(node_pods());
  v1::AllocatableResourcesResponse alloc;
  auto* d = alloc.add_devices();
  d->set_resource_name("nvidia.com/gpu");
  for (const auto& id : {kGpu0 + "::0", kGpu0 + "::1", kGpu0 + "::2", kGpu0 + "::3", kGpu2}) d->add_device_ids(id);
  kubelet.set_allocatable(alloc);

  PodResourcesMonitor monitor(socket_, {}, std::chrono::seconds(60));
  monitor.poll_now();
  auto st = monitor.state();
  ASSERT_TRUE(st.up) << st.last_error;
  EXPECT_TRUE(st.socket_present);
  ASSERT_EQ(st.allocations.size(), 5u);
  EXPECT_EQ(st.inventory.size(), 5u);

  auto directory = std::make_shared<PodDirectory>(std::chrono::minutes(10));
  PodInfo a;
  a.uid = "u-a";
  a.namespace_name = "ml";
  a.name = "a";
  a.labels = {{"team", "vision"}};
  directory->upsert_pod(a);
  directory->upsert_namespace("research", {{"team", "science"}});
  KubernetesMetrics metrics(directory, {}, nullptr, &monitor);
  metrics::ExpositionWriter out;
  metrics.write_metrics(out);
  auto samples = testing::parse_exposition(out.text());
  auto info = [&](std::map<std::string, std::string> labels) {
    return testing::sample_value(samples, "gpuledger_gpu_allocation_info", labels).value_or(-1);
  };
  EXPECT_EQ(info({{"namespace", "ml"}, {"pod", "a"}, {"container", "main"}, {"team", "vision"}, {"UUID", kGpu0},
                  {"resource", "nvidia.com/gpu"}, {"device_id", kGpu0 + "::0"}, {"sharing", "replicas"}}),
            1);
  EXPECT_EQ(info({{"namespace", "ml"}, {"pod", "b"}, {"container", "main"}, {"team", "ml"}, {"UUID", kGpu0},
                  {"device_id", kGpu0 + "::3"}, {"sharing", "replicas"}}),
            1);
  EXPECT_EQ(info({{"namespace", "web"}, {"pod", "infer"}, {"container", "srv"}, {"team", "web"}, {"UUID", kGpu1},
                  {"resource", "nvidia.com/mig-1g.5gb"}, {"device_id", "MIG-" + kGpu1 + "/2/0"}, {"sharing", "mig"}}),
            1);
  EXPECT_EQ(info({{"namespace", "research"}, {"pod", "train"}, {"container", "trainer"}, {"team", "science"},
                  {"UUID", kGpu2}, {"sharing", "exclusive"}}),
            1);
  EXPECT_EQ(info({{"namespace", "dra"}, {"pod", "claimer"}, {"resource", "gpu.nvidia.com"},
                  {"device_id", "node-1/gpu-1"}, {"UUID", kGpu1}}),
            1);
  EXPECT_EQ(info({{"container", "logger"}}), -1);
  EXPECT_EQ(info({{"container", "nic"}}), -1);
  EXPECT_EQ(testing::sample_value(samples, "gpuledger_pod_resources_up", {}), 1);
  EXPECT_EQ(testing::sample_value(samples, "gpuledger_gpu_allocatable_info", {{"device_id", kGpu2}}), 1);

  // Answering errors: allocation unknown, counted; back again: known again.
  kubelet.fail_with(grpc::StatusCode::UNAVAILABLE);
  monitor.poll_now();
  st = monitor.state();
  EXPECT_FALSE(st.up);
  EXPECT_EQ(st.errors, 1u);
  EXPECT_TRUE(st.allocations.empty());
  EXPECT_NE(st.last_error.find("test kubelet says no"), std::string::npos);
  kubelet.fail_with(std::nullopt);
  monitor.poll_now();
  EXPECT_TRUE(monitor.state().up);
  EXPECT_EQ(monitor.state().allocations.size(), 5u);
}

TEST_F(PodResourcesTest, AbsentSocketMeansUnknownAllocationNotFailure) {
  PodResourcesMonitor monitor(socket_, {}, std::chrono::milliseconds(10));
  monitor.start();
  ASSERT_TRUE(testing::poll_until([&] { return monitor.polls() >= 2; }));
  auto st = monitor.state();
  EXPECT_FALSE(st.up);
  EXPECT_FALSE(st.socket_present);
  EXPECT_EQ(st.errors, 0u);
  KubernetesMetrics metrics(nullptr, {}, nullptr, &monitor);
  metrics::ExpositionWriter out;
  metrics.write_metrics(out);
  EXPECT_NE(out.text().find("gpuledger_pod_resources_up 0"), std::string::npos) << out.text();
  EXPECT_NE(out.text().find("gpuledger_pod_resources_socket_present 0"), std::string::npos);

  // The kubelet appears later: picked up by the background poll.
  TestKubelet kubelet(socket_);
  kubelet.set_list(node_pods());
  ASSERT_TRUE(testing::poll_until([&] { return monitor.state().up; }));
  EXPECT_EQ(monitor.state().allocations.size(), 5u);
  monitor.stop();
}

TEST_F(PodResourcesTest, ASocketThatIsNotAKubeletGivesErrorsNotACrash) {
  // A unix socket that accepts and says nothing gRPC understands.
  TestKubelet kubelet(socket_);
  kubelet.shutdown();
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  std::thread junk([fd] {
    int c = ::accept(fd, nullptr, nullptr);
    if (c >= 0) {
      const char garbage[] = "HTTP/1.1 200 OK\r\n\r\nnot grpc at all";
      (void)!::write(c, garbage, sizeof garbage);
      ::close(c);
    }
  });
  PodResourcesMonitor monitor(socket_, {}, std::chrono::seconds(60));
  monitor.poll_now();
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  junk.join();
  auto st = monitor.state();
  EXPECT_FALSE(st.up);
  EXPECT_TRUE(st.socket_present);
  EXPECT_EQ(st.errors, 1u);
}

}  // namespace
}  // namespace gpuledger::kubernetes
