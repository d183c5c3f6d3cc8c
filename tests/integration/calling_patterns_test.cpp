// The busy spans are per stream and context, not per thread (bpf/gpuledger_abi.h,
// gl_open_spans): as root, with the real BPF programs and the CUDA driver
// simulator, a tenant's span time covers the work it ran whatever its calling
// pattern: waiting on the launching thread or another, on the context, a
// stream, an event, by polling a stream or an event, never (its exit ends the
// spans), on graphs or on several streams. The simulator makes each launch
// 20 ms of work on its stream; ten launches are 200 ms of work, so every
// pattern's busy time is at least 200 ms and at most that plus the waiting
// the pattern adds (its sleep, the polls' and the processes' overheads).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "agent/agent.h"
#include "bpf_requirement.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
using simulation::ScopedCgroup;
using namespace std::chrono_literals;

constexpr uint64_t kWorkNs = 200'000'000;  // 10 launches x 20 ms
const std::vector<std::string> kKernel20ms = {"--kernel-us", "20000", "--quiet"};

agent::AgentOptions options() {
  agent::AgentOptions o;
  o.gpu_inventory = [] { return std::vector<identity::GpuIdentity>{{0, "GPU-calling-patterns", 0}}; };
  o.cuda_libs = {kSimLib};
  o.discover = false;
  o.classifier.cgroup_roots = {test_cgroup("")};
  return o;
}

class CallingPatterns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!bpf_unavailable_reason().empty()) return;
    agent_ = new agent::Agent(options());
    agent_->start();
  }
  static void TearDownTestSuite() {
    delete agent_;
    agent_ = nullptr;
  }
  void SetUp() override { GL_REQUIRE_BPF(); }

  static uint64_t busy_ns(const std::string& id) {
    auto snap = agent_->snapshot();
    const auto* w = find_workload(snap, id);
    return w ? w->usage.counters.busy_ns : 0;
  }
  // Runs the script in its own service cgroup; the busy time once it exited.
  static uint64_t run_pattern(const std::string& name, const std::string& script) {
    ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/" + name + ".service"));
    EXPECT_EQ(run_tenant({cg.dir()}, script, {}, kKernel20ms).exit_code, 0) << name;
    const std::string id = "systemd/" + name + ".service";
    uint64_t busy = 0;
    eventually([&] { return (busy = busy_ns(id)) >= kWorkNs; }, 3000ms);
    return busy;
  }
  static inline agent::Agent* agent_ = nullptr;
};

struct Pattern {
  std::string name, script;
  uint64_t slack_ns;  // what the pattern may add to the work
};

TEST_F(CallingPatterns, EveryWayOfWaitingCoversTheWorkItWaitedFor) {
  const std::string work = "init; launch 1 1 1 1 1 1 x10; ";
  const std::vector<Pattern> patterns = {
      {"same-thread", work + "sync", 100'000'000},
      {"other-thread", work + "sync-thread", 100'000'000},
      {"context-other-thread", work + "sync-ctx-thread", 100'000'000},
      {"context", work + "sync-ctx", 100'000'000},
      {"stream-polling", work + "query", 100'000'000},
      {"event", work + "sync-event", 100'000'000},
      {"event-polling", work + "event-query", 100'000'000},
      {"never", work + "sleep-ms 300; exit 0", 250'000'000},  // ended by the exit, ~300 ms after the launch
      {"graphs", "init; graph x10; sync-thread", 100'000'000},
      {"several-streams", "init; stream 1; launch 1 1 1 1 1 1 x5; stream 2; launch 1 1 1 1 1 1 x5; sync; stream 1; sync",
       100'000'000},
  };
  for (const auto& p : patterns) {
    const uint64_t busy = run_pattern(p.name, p.script);
    std::printf("[ pattern  ] %-22s busy %7.1f ms for %.0f ms of work\n", p.name.c_str(), busy / 1e6, kWorkNs / 1e6);
    EXPECT_GE(busy, kWorkNs) << p.name;
    EXPECT_LE(busy, kWorkNs + p.slack_ns) << p.name;
  }
}

TEST_F(CallingPatterns, AnOpenSpanIsCountedToDateAndItsProcessExitEndsIt) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/open-span.service"));
  auto child = start_interactive_tenant({cg.dir()}, "init; launch 1 1 1 1 1 1 x10; print-ready; wait-stdin; exit 0",
                                        {"CUDASIM_KERNEL_US=20000"});
  await_ready(*child);
  const std::string id = "systemd/open-span.service";
  // Never waited for: its span grows while it is open (spread over the windows it crosses).
  uint64_t first = 0;
  ASSERT_TRUE(eventually([&] { return (first = busy_ns(id)) > 0; }));
  std::this_thread::sleep_for(300ms);
  const uint64_t later = busy_ns(id);
  EXPECT_GE(later, first + 250'000'000);
  finish_interactive_tenant(*child);
  // The exit ended it: no longer growing.
  uint64_t ended = 0;
  ASSERT_TRUE(eventually([&] {
    ended = busy_ns(id);
    std::this_thread::sleep_for(50ms);
    return ended == busy_ns(id);
  }));
  EXPECT_GE(ended, later);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(busy_ns(id), ended);
}

TEST_F(CallingPatterns, StreamsBeyondTheSlotsShareTheOverflowSlotWhichOnlyAContextWaitEnds) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/many-streams.service"));
  std::string script = "init; ";
  for (int s = 1; s <= 10; ++s) script += "stream " + std::to_string(s) + "; launch 1 1 1 1 1 1; ";
  script += "sync-ctx";
  const uint64_t full_before = agent_->snapshot().self.kernel_stats[GL_STAT_SPAN_STREAMS_FULL];
  ASSERT_EQ(run_tenant({cg.dir()}, script, {}, kKernel20ms).exit_code, 0);
  const std::string id = "systemd/many-streams.service";
  uint64_t busy = 0;
  // Ten streams of 20 ms each, in parallel: seven slots and the overflow slot
  // (streams 8 to 10 together), each span covering at least its 20 ms.
  EXPECT_TRUE(eventually([&] { return (busy = busy_ns(id)) >= 8 * 20'000'000ull; })) << busy;
  EXPECT_GE(agent_->snapshot().self.kernel_stats[GL_STAT_SPAN_STREAMS_FULL], full_before + 3);  // streams 8..10
}

}  // namespace
}  // namespace gpuledger::testing
