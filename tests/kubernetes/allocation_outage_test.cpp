// The GPU allocation through a kubelet outage, with a real gRPC kubelet on a
// unix socket: an agent up before the kubelet reads it within a second of its
// socket appearing, and one whose kubelet restarts reads it again within a
// second of its coming back (with a 10 s or 60 s poll interval, so only the
// retry while down, or the socket's creation, can do it). Windows billed meanwhile, to the micro-unit: before
// the first answer, and once the last is too old, the GPUs are held by
// __allocation_unknown__, never __unallocated__; through an outage the last
// answer still holds them, the GPU nobody held stays unallocated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "exposition_parser.h"
#include "kubernetes/kubernetes_metrics.h"
#include "kubernetes/pod_resources_client.h"
#include "ledger/store.h"
#include "node/allocation_unknown.h"
#include "poll.h"
#include "test_kubelet.h"

namespace gpuledger::kubernetes {
namespace {
namespace fs = std::filesystem;
using testing::TestKubelet;
using Basis = BillingAllocation::Basis;
using Clock = std::chrono::steady_clock;

const std::string kHeld = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
const std::string kFree = "GPU-cccccccc-2222-4222-8222-222222222222";
const std::string kTrainer = "k8s/ml/trainer/main";  // the holder's account: a container that ran no CUDA
constexpr int64_t kT0 = 1'800'000'000;                // aligned to the 10 s windows

class AllocationOutageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuledger-outage-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    socket_ = dir_ + "/kubelet.sock";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static v1::ListPodResourcesResponse node_pods() {
    v1::ListPodResourcesResponse r;
    TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(r, "ml", "trainer"), "main"),
                             "nvidia.com/gpu", {kHeld});
    return r;
  }
  std::unique_ptr<TestKubelet> start_kubelet() {
    auto k = std::make_unique<TestKubelet>(socket_);
    k->set_list(node_pods());
    return k;
  }
  // The time from now until the monitor has the kubelet's answer.
  static std::chrono::milliseconds time_to_answer(const PodResourcesMonitor& monitor) {
    const auto from = Clock::now();
    EXPECT_TRUE(testing::poll_until([&] { return monitor.state().up; }, std::chrono::seconds(5)));
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - from);
  }
  static std::string basis_metric(const PodResourcesMonitor& monitor) {
    KubernetesMetrics metrics(nullptr, {}, nullptr, &monitor);
    metrics::ExpositionWriter out;
    metrics.write_metrics(out);
    for (const char* b : {"kubelet", "last_answer", "unknown"})
      if (out.text().find(std::string("gpuledger_gpu_allocation_basis{basis=\"") + b + "\"} 1") != std::string::npos)
        return b;
    return "none";
  }
  std::string dir_, socket_;
};

TEST_F(AllocationOutageTest, AnAgentUpBeforeTheKubeletReadsItWithinASecondOfItsSocketAppearing) {
  PodResourcesMonitor monitor(socket_, {}, std::chrono::seconds(10));
  monitor.start();
  ASSERT_TRUE(testing::poll_until([&] { return monitor.polls() >= 1; }));
  EXPECT_EQ(monitor.billing().basis, Basis::kUnknown);
  EXPECT_EQ(basis_metric(monitor), "unknown");
  auto kubelet = start_kubelet();
  const auto took = time_to_answer(monitor);
  EXPECT_LT(took.count(), 1000) << "read " << took.count() << " ms after the socket appeared";
  std::printf("read %lld ms after the socket appeared\n", static_cast<long long>(took.count()));
  const BillingAllocation b = monitor.billing();
  EXPECT_EQ(b.basis, Basis::kAnswer);
  ASSERT_EQ(b.allocations.size(), 1u);
  EXPECT_EQ(b.allocations[0].device.uuid, kHeld);
  EXPECT_EQ(basis_metric(monitor), "kubelet");
  monitor.stop();
}

TEST_F(AllocationOutageTest, ANodeBootingWithoutTheSocketsDirectoryYetReadsItWithinASecond) {
  // No pod-resources directory at all yet: nothing to watch, only the retry.
  socket_ = dir_ + "/pod-resources/kubelet.sock";
  PodResourcesMonitor monitor(socket_, {}, std::chrono::seconds(10));
  monitor.start();
  ASSERT_TRUE(testing::poll_until([&] { return monitor.polls() >= 2; }));
  EXPECT_EQ(monitor.billing().basis, Basis::kUnknown);
  fs::create_directories(dir_ + "/pod-resources");
  auto kubelet = start_kubelet();
  const auto took = time_to_answer(monitor);
  EXPECT_LT(took.count(), 1000) << "read " << took.count() << " ms after the socket appeared";
  std::printf("no directory at first: read %lld ms after the socket appeared\n", static_cast<long long>(took.count()));
  monitor.stop();
}

TEST_F(AllocationOutageTest, AKubeletRestartKeepsTheLastAllocationAndIsReadAgainWithinASecond) {
  auto kubelet = start_kubelet();
  PodResourcesMonitor monitor(socket_, {}, std::chrono::seconds(10));
  monitor.poll_now();
  ASSERT_TRUE(monitor.state().up);
  const auto answered = monitor.state().allocations;
  kubelet->shutdown();
  monitor.poll_now();  // the poll that finds it gone (the interval's, on a node)
  ASSERT_FALSE(monitor.state().up);
  monitor.start();  // polls every 10 s, but every 500 ms while the kubelet does not answer
  BillingAllocation b = monitor.billing();
  EXPECT_EQ(b.basis, Basis::kLastAnswer);
  EXPECT_EQ(b.allocations, answered);
  EXPECT_EQ(basis_metric(monitor), "last_answer");
  kubelet = start_kubelet();
  const auto took = time_to_answer(monitor);
  EXPECT_LT(took.count(), 1000) << "read again " << took.count() << " ms after the socket came back";
  std::printf("read again %lld ms after the socket came back\n", static_cast<long long>(took.count()));
  EXPECT_EQ(monitor.billing().basis, Basis::kAnswer);
  EXPECT_EQ(monitor.billing().allocations, answered);

  // A last answer older than the bound stands for nothing.
  kubelet->shutdown();
  monitor.set_keep_last_answer(std::chrono::seconds(0));
  monitor.poll_now();
  b = monitor.billing();
  EXPECT_EQ(b.basis, Basis::kUnknown);
  EXPECT_TRUE(b.allocations.empty());
  monitor.stop();
}

TEST_F(AllocationOutageTest, AKubeletRestartedBetweenPollsIsReadAtOnce) {
  auto kubelet = start_kubelet();
  PodResourcesMonitor monitor(socket_, {}, std::chrono::seconds(60));
  monitor.start();
  ASSERT_TRUE(testing::poll_until([&] { return monitor.state().up; }));
  ASSERT_EQ(monitor.state().allocations.size(), 1u);
  // Restarted, with one more pod, well before the next poll (60 s): only the
  // socket's creation can make the agent read it.
  kubelet->shutdown();
  kubelet = std::make_unique<TestKubelet>(socket_);
  auto pods = node_pods();
  TestKubelet::add_devices(TestKubelet::add_container(TestKubelet::add_pod(pods, "ml", "second"), "main"),
                           "nvidia.com/gpu", {kFree});
  kubelet->set_list(pods);
  const auto from = Clock::now();
  EXPECT_TRUE(testing::poll_until([&] { return monitor.state().allocations.size() == 2; }, std::chrono::seconds(5)));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - from).count();
  EXPECT_LT(took, 1000) << "read again " << took << " ms after the socket came back";
  std::printf("restarted between polls: read again %lld ms after the socket came back\n", static_cast<long long>(took));
  monitor.stop();
}

// Per window and GPU: the account -> micro-units charged.
using Bill = std::map<std::pair<int64_t, std::string>, std::map<std::string, int64_t>>;

TEST_F(AllocationOutageTest, WindowsAreBilledToTheLastAllocationThroughAnOutageAndElseToAllocationUnknown) {
  const fs::path store_path = fs::path(dir_) / "ledger.db";
  ledger::Store store(store_path.string());
  // 3.60 an hour: 1000 micro-units a second, 10 000 a 10 s window.
  const ledger::PriceBook prices =
      ledger::parse_prices("currency: USD\ndefault_per_hour: 3.60\nwindow_seconds: 10\nidle_policy: holders\n");
  ledger::Accountant accountant(store, prices);
  device::DeviceSnapshot devices;
  for (const std::string& uuid : {kHeld, kFree}) {
    device::GpuInfo g;
    g.uuid = uuid;
    g.model = "NVIDIA H100 80GB HBM3";
    devices.gpus.push_back(g);
  }
  PodResourcesMonitor monitor(socket_, {}, std::chrono::seconds(10));
  // Two observations a window, each billed by what the monitor says then.
  auto window = [&](int64_t start) {
    for (int64_t t : {start, start + 5})
      accountant.observe(node::make_billed_observation(static_cast<double>(kT0 + t), {}, devices,
                                                         monitor.billing(), prices));
  };
  monitor.poll_now();  // the node boots: no socket yet
  window(0);
  auto kubelet = start_kubelet();
  monitor.poll_now();
  window(10);
  kubelet->shutdown();  // the kubelet restarts
  monitor.poll_now();
  window(20);
  monitor.set_keep_last_answer(std::chrono::seconds(0));  // ... for longer than the bound
  window(30);
  kubelet = start_kubelet();
  monitor.poll_now();
  window(40);
  accountant.observe(node::make_billed_observation(static_cast<double>(kT0 + 50), {}, devices, monitor.billing(),
                                                     prices));

  Bill bill;
  for (const auto& w : store.windows(kT0, kT0 + 50))
    for (const auto& c : w.charges)
      if (c.micros) bill[{w.start - kT0, w.slot.uuid}][c.account] += c.micros;
  const std::map<std::string, int64_t> unknown = {{"__allocation_unknown__", 10000}};
  const std::map<std::string, int64_t> held = {{kTrainer, 10000}}, free = {{"__unallocated__", 10000}};
  const Bill expected = {
      {{0, kHeld}, unknown},  {{0, kFree}, unknown},   // before the first answer
      {{10, kHeld}, held},    {{10, kFree}, free},     // answered
      {{20, kHeld}, held},    {{20, kFree}, free},     // the kubelet down: its last answer
      {{30, kHeld}, unknown}, {{30, kFree}, unknown},  // down past the bound
      {{40, kHeld}, held},    {{40, kFree}, free},     // answered again
  };
  EXPECT_EQ(bill, expected);
  // The account is a special one under every view: its labels say only its name.
  for (const auto& w : store.windows(kT0, kT0 + 10)) {
    for (const auto& a : w.accounts) {
      if (a.account == "__allocation_unknown__") {
        EXPECT_EQ(a.labels, (ledger::AccountLabels{"", "", "", a.account}));
      }
    }
  }
}

}  // namespace
}  // namespace gpuledger::kubernetes
