// Issue 22: an agent that had run and stopped left its probes pinned, and
// every call into NVIDIA's real libcuda.so.1 kept trapping into the kernel
// until someone ran `gpuledger uninstall`. Here the agent binary (real BPF)
// probes the real driver library (the Debian non-free packages, unpacked by
// scripts/fetch-nvidia-libs.sh) and the cost of a call is measured by a process
// that loads it, before, during and after the agent; then --keep-pins-on-exit,
// and its exceptions in Kubernetes, decided by the test API server.
#include <sys/stat.h>

#include <cstdio>
#include <memory>

#include "bpf_requirement.h"
#include "exposition_parser.h"
#include "reliability_support.h"
#include "test_api_server.h"

namespace gpuledger::testing {
namespace {

// Medians of batches of calls, in ns. Without a probe a call costs tens of
// ns; with one attached it traps twice (entry and return), microseconds.
constexpr double kProbedAtLeastNs = 500;
constexpr double kUnprobedAtMostNs = 2000;

double call_cost_ns(const std::string& library) {
  const std::string command = std::string(GPULEDGER_CALL_COST) + " '" + library + "' 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  std::string out;
  char buf[256];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  if (p) ::pclose(p);
  const auto at = out.find("median_ns ");
  if (at == std::string::npos) ADD_FAILURE() << command << ": " << out;
  return at == std::string::npos ? -1 : std::stod(out.substr(at + 10));
}

std::string real_libcuda() { return GPULEDGER_REAL_LIBCUDA; }

// The real driver, probed by name only: nothing else on this machine counts.
std::vector<std::string> real_driver_args(const PinDir& pins, bool keep) {
  std::vector<std::string> args = {"--no-discovery", "--cuda-lib", real_libcuda(), "--store", "", "--no-xid",
                                   "--bpf-pin-dir", pins.path()};
  if (keep) args.push_back("--keep-pins-on-exit");
  return args;
}

double metric(int port, const std::string& name) {
  return sample_value(parse_exposition(get_body(port, "/metrics")), name, {}).value_or(-1);
}

size_t pins_under(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (!it->is_directory(ec)) ++n;
  return n;
}

#define GL_REQUIRE_REAL_LIBCUDA()                                                                      \
  do {                                                                                                 \
    if (real_libcuda().empty() || !fs::exists(real_libcuda())) {                                       \
      if (running_in_ci()) FAIL() << "NVIDIA's libcuda is missing: run scripts/fetch-nvidia-libs.sh";  \
      GTEST_SKIP() << "NVIDIA's libcuda is missing: run scripts/fetch-nvidia-libs.sh build/nvidia";    \
    }                                                                                                  \
  } while (0)

TEST(PinsOnExit, AStopWithoutTheFlagLeavesNoProbeAndARealLibcudaCallCostsWhatItDidBefore) {
  GL_REQUIRE_BPF();
  GL_REQUIRE_REAL_LIBCUDA();
  PinDir pins("exit-plain");
  const double before = call_cost_ns(real_libcuda());
  auto agent = std::make_unique<Agent>(real_driver_args(pins, false));
  ASSERT_GT(metric(agent->port(), "gpuledger_probes_attached"), 0) << agent->log();
  const double during = call_cost_ns(real_libcuda());
  ASSERT_GT(pins_under(pins.path()), 0u) << "the data plane is pinned while the agent runs";
  agent.reset();  // SIGTERM, waited for
  EXPECT_FALSE(fs::exists(pins.path())) << "pins left behind: " << pins_under(pins.path());
  const double after = call_cost_ns(real_libcuda());
  std::printf("real libcuda cuCtxSetCurrent, median per call: before the agent %.1f ns, probed %.1f ns, after "
              "its stop %.1f ns\n",
              before, during, after);
  EXPECT_LT(before, kUnprobedAtMostNs);
  EXPECT_GT(during, kProbedAtLeastNs) << "the measurement sees a probe";
  EXPECT_LT(after, kUnprobedAtMostNs) << "a probe is still attached after the agent stopped";
}

TEST(PinsOnExit, WithTheFlagASigtermKeepsEverythingForTheSuccessorWhichRemovesItWhenStoppedWithout) {
  GL_REQUIRE_BPF();
  GL_REQUIRE_REAL_LIBCUDA();
  PinDir pins("exit-keep");
  auto agent = std::make_unique<Agent>(real_driver_args(pins, true));
  const size_t pinned = pins_under(pins.path());
  ASSERT_GT(pinned, 0u) << agent->log();
  agent.reset();
  EXPECT_EQ(pins_under(pins.path()), pinned) << "every pin kept";
  const double unattended = call_cost_ns(real_libcuda());
  EXPECT_GT(unattended, kProbedAtLeastNs) << "the probes stay attached (and count) while no agent runs";

  auto successor = std::make_unique<Agent>(real_driver_args(pins, false));
  EXPECT_EQ(metric(successor->port(), "gpuledger_bpf_pins_adopted"), 1.0) << successor->log();
  EXPECT_EQ(metric(successor->port(), "gpuledger_bpf_pinned_libraries_adopted"), 1.0) << successor->log();
  EXPECT_EQ(metric(successor->port(), "gpuledger_bpf_pins_orphaned_seconds"), 0.0) << "a fresh heartbeat";
  successor.reset();
  EXPECT_FALSE(fs::exists(pins.path()));
  const double after = call_cost_ns(real_libcuda());
  std::printf("real libcuda call while no agent ran (pins kept): %.1f ns; after the successor's plain stop: %.1f ns\n",
              unattended, after);
  EXPECT_LT(after, kUnprobedAtMostNs);
}

// Moves the pins' heartbeat (the pin directory's modification time) back.
void age_heartbeat(const std::string& dir, int64_t seconds) {
  const timespec now{static_cast<time_t>(unix_now()) - seconds, 0};
  const timespec times[2] = {now, now};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir.c_str(), times, 0), 0) << dir;
}

TEST(PinsOnExit, OrphanedPinsAreReportedAtStartInAMetricAndByDoctor) {
  GL_REQUIRE_BPF();
  Scratch scratch("stale");
  PinDir pins("stale");  // not "orphaned": the output is searched for that word
  std::vector<std::string> args = {"--no-discovery", "--cuda-lib", sim_library(), "--store", "", "--no-xid",
                                   "--bpf-pin-dir", pins.path(), "--keep-pins-on-exit"};
  auto agent = std::make_unique<Agent>(args);
  std::string out;
  run_cli({"doctor", "--bpf-pin-dir", pins.path()}, &out);
  EXPECT_NE(out.find("is held by a running agent"), std::string::npos) << out;
  stop_agent(agent, SIGKILL);
  ASSERT_GT(pins_under(pins.path()), 0u);

  // No agent: doctor says what the pins cost and how to remove them.
  run_cli({"doctor", "--bpf-pin-dir", pins.path()}, &out);
  EXPECT_NE(out.find("no agent running"), std::string::npos) << out;
  EXPECT_NE(out.find("CUDA calls on this node are being trapped by gpuledger's probes"), std::string::npos) << out;
  EXPECT_NE(out.find("remove them with `gpuledger uninstall --bpf-pin-dir " + pins.path() + "`"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("orphaned"), std::string::npos) << "a heartbeat seconds old is not orphaned: " << out;

  // Two days without an agent: orphaned, for doctor and for the next agent.
  constexpr int64_t kTwoDays = 2 * 24 * 3600;
  age_heartbeat(pins.path(), kTwoDays);
  run_cli({"doctor", "--bpf-pin-dir", pins.path()}, &out);
  EXPECT_NE(out.find("last agent heartbeat 48 h 0 min ago, orphaned"), std::string::npos) << out;
  run_cli({"doctor", "--bpf-pin-dir", pins.path(), "--orphaned-pins-after", "72h"}, &out);
  EXPECT_EQ(out.find("orphaned"), std::string::npos) << out;

  age_heartbeat(pins.path(), kTwoDays);
  agent = std::make_unique<Agent>(args);
  EXPECT_NE(agent->log().find("had no agent for 48 h 0 min (longer than --orphaned-pins-after)"), std::string::npos)
      << agent->log();
  const double orphaned = metric(agent->port(), "gpuledger_bpf_pins_orphaned_seconds");
  EXPECT_GE(orphaned, kTwoDays);
  EXPECT_LT(orphaned, kTwoDays + 60) << "the age found at start";
  EXPECT_EQ(metric(agent->port(), "gpuledger_bpf_pins_adopted"), 1.0);
  // Its own heartbeat makes the pins fresh again.
  EXPECT_TRUE(eventually(
      [&] {
        struct stat st {};
        return ::stat(pins.path().c_str(), &st) == 0 && st.st_mtim.tv_sec >= static_cast<time_t>(unix_now()) - 5;
      },
      std::chrono::milliseconds(5000)));
  agent.reset();
  EXPECT_TRUE(fs::exists(pins.path())) << "kept: --keep-pins-on-exit";

  // An agent that finds orphaned pins under a shorter threshold says so too.
  age_heartbeat(pins.path(), 120);
  args.insert(args.end(), {"--orphaned-pins-after", "1m"});
  agent = std::make_unique<Agent>(args);
  EXPECT_NE(agent->log().find("had no agent for 0 h 2 min"), std::string::npos) << agent->log();
}

// The agent as a DaemonSet's pod, asking the test API server about its
// DaemonSet when it is stopped with --keep-pins-on-exit.
class DaemonSetFate : public ::testing::Test {
 protected:
  static constexpr const char* kNamespace = "gpuledger";
  static constexpr const char* kPod = "gpuledger-agent-x7k2p";
  static constexpr const char* kDaemonSet = "gpuledger-agent";
  static constexpr const char* kNode = "node-1";

  DaemonSetFate() : scratch_("dsfate"), pins_("dsfate") {}

  void SetUp() override {
    api_ = std::make_unique<TestApiServer>(TestApiServer::Options{});
    api_->start();
    api_->upsert_node({{"apiVersion", "v1"},
                       {"kind", "Node"},
                       {"metadata", {{"name", kNode}, {"labels", {{"nvidia.com/gpu.present", "true"}}}}}});
    auto pod = TestApiServer::make_pod("uid-agent", kNamespace, kPod, kNode, {}, {});
    pod["metadata"]["ownerReferences"] = nlohmann::json::array({nlohmann::json{
        {"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", kDaemonSet}, {"uid", "uid-ds"}, {"controller", true}}});
    api_->upsert_pod(pod);
    daemonset_ = {{"apiVersion", "apps/v1"},
                  {"kind", "DaemonSet"},
                  {"metadata", {{"name", kDaemonSet}, {"namespace", kNamespace}, {"uid", "uid-ds"}, {"generation", 1}}},
                  {"spec",
                   {{"template",
                     {{"metadata", {{"labels", {{"app", "gpuledger"}}}}},
                      {"spec", {{"nodeSelector", {{"nvidia.com/gpu.present", "true"}}}}}}}}}};
    api_->upsert_daemonset(daemonset_);
    ::setenv("POD_NAME", kPod, 1);
    ::setenv("POD_NAMESPACE", kNamespace, 1);
  }
  void TearDown() override {
    ::unsetenv("POD_NAME");
    ::unsetenv("POD_NAMESPACE");
  }

  std::unique_ptr<Agent> start_agent() {
    return std::make_unique<Agent>(std::vector<std::string>{
        "--no-discovery", "--cuda-lib", sim_library(), "--store", "", "--no-xid", "--bpf-pin-dir", pins_.path(),
        "--keep-pins-on-exit", "--kubeconfig", api_->write_kubeconfig(scratch_.dir().string()), "--node-name", kNode});
  }
  // Stops the agent (SIGTERM) and returns its log.
  std::string stop(std::unique_ptr<Agent>& agent) {
    ::kill(agent->pid(), SIGTERM);
    // The last words of a stop: the pins removed, kept, or not removed.
    EXPECT_TRUE(eventually(
        [&] {
          const std::string log = agent->log();
          return log.find("BPF pins: removed ") != std::string::npos ||
                 log.find("`gpuledger uninstall` removes them") != std::string::npos ||
                 log.find("not removed") != std::string::npos;
        },
        std::chrono::milliseconds(20000)));
    std::string log = agent->log();
    agent.reset();
    return log;
  }

  Scratch scratch_;
  PinDir pins_;
  std::unique_ptr<TestApiServer> api_;
  nlohmann::json daemonset_;
};

TEST_F(DaemonSetFate, ADeletedDaemonSetMakesTheLastPodRemoveThePins) {
  GL_REQUIRE_BPF();
  auto agent = start_agent();
  api_->delete_daemonset(kNamespace, kDaemonSet);
  const std::string log = stop(agent);
  EXPECT_NE(log.find("the DaemonSet gpuledger/gpuledger-agent was deleted: this was the node's last agent"),
            std::string::npos)
      << log;
  EXPECT_FALSE(fs::exists(pins_.path())) << log;
}

TEST_F(DaemonSetFate, ADaemonSetBeingDeletedMakesTheLastPodRemoveThePins) {
  GL_REQUIRE_BPF();
  auto agent = start_agent();
  daemonset_["metadata"]["deletionTimestamp"] = "2026-12-01T12:00:00Z";
  api_->upsert_daemonset(daemonset_);
  const std::string log = stop(agent);
  EXPECT_NE(log.find("is being deleted"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(pins_.path())) << log;
}

TEST_F(DaemonSetFate, ANodeNoLongerSelectedMakesThePodRemoveThePins) {
  GL_REQUIRE_BPF();
  auto agent = start_agent();
  daemonset_["spec"]["template"]["spec"]["nodeSelector"] = {{"gpuledger/agent", "true"}};
  api_->upsert_daemonset(daemonset_);
  const std::string log = stop(agent);
  EXPECT_NE(log.find("no longer selects the node node-1"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(pins_.path())) << log;
}

TEST_F(DaemonSetFate, AnUpdatedDaemonSetKeepsThePinsForTheNextPod) {
  GL_REQUIRE_BPF();
  auto agent = start_agent();
  const size_t pinned = pins_under(pins_.path());
  // A rolling update: a new template revision, still selecting the node.
  daemonset_["metadata"]["generation"] = 2;
  daemonset_["spec"]["template"]["metadata"]["annotations"] = {{"kubectl.kubernetes.io/restartedAt", "now"}};
  api_->upsert_daemonset(daemonset_);
  const std::string log = stop(agent);
  EXPECT_NE(log.find("remains and still selects the node node-1"), std::string::npos) << log;
  EXPECT_EQ(pins_under(pins_.path()), pinned) << log;
  auto next = start_agent();
  EXPECT_EQ(metric(next->port(), "gpuledger_bpf_pins_adopted"), 1.0) << next->log();
  EXPECT_EQ(metric(next->port(), "gpuledger_bpf_pinned_libraries_adopted"), 1.0) << next->log();
}

// `kubectl delete -k` deletes the ServiceAccount and the RBAC before the
// DaemonSet: its pods, stopped last, are refused by then.
TEST_F(DaemonSetFate, AccessWithdrawnAtTheStopMeansGpuledgerIsBeingRemoved) {
  GL_REQUIRE_BPF();
  for (bool forbidden : {false, true}) {
    auto agent = start_agent();
    api_->revoke_access(forbidden);
    const std::string log = stop(agent);
    EXPECT_NE(log.find("the API server refuses to show this agent's pod now (HTTP " +
                       std::string(forbidden ? "403" : "401")),
              std::string::npos)
        << log;
    EXPECT_FALSE(fs::exists(pins_.path())) << log;
    api_->stop();
    SetUp();  // a server that answers again, for the second round
  }
}

TEST_F(DaemonSetFate, AnUnreachableApiServerKeepsThePinsAndSaysSo) {
  GL_REQUIRE_BPF();
  auto agent = start_agent();
  const size_t pinned = pins_under(pins_.path());
  api_->delete_daemonset(kNamespace, kDaemonSet);  // deleted, but nobody can ask
  api_->stop();
  const std::string log = stop(agent);
  EXPECT_NE(log.find("kept for the next agent, as the Kubernetes API cannot tell whether one comes"),
            std::string::npos)
      << log;
  EXPECT_EQ(pins_under(pins_.path()), pinned);
}

}  // namespace
}  // namespace gpuledger::testing
