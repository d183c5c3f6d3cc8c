// The busy spans are per stream and context, not per thread (bpf/cuda_probes.h,
// gl_open_spans): as root, with the real BPF programs and the CUDA driver
// simulator, a tenant's span time covers the work it ran whatever its calling
// pattern: waiting on the launching thread or another, on the context, a
// stream, an event, by polling a stream or an event, never (its exit ends the
// spans), on graphs or on several streams. The simulator makes each launch
// 20 ms of work on its stream; ten launches are 200 ms of work, so every
// pattern's busy time is at least 200 ms and at most that plus the waiting
// the pattern adds (its sleep, the polls' and the processes' overheads).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "device/nvml_client.h"
#include "ledger/store.h"
#include "node/observation_inputs.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
using simulation::ScopedCgroup;
using namespace std::chrono_literals;

constexpr uint64_t kWorkNs = 200'000'000;  // 10 launches x 20 ms
const std::vector<std::string> kKernel20ms = {"--kernel-us", "20000", "--quiet"};

// The pids the test has NVML list: a GPU user the probes never see (Vulkan,
// OpenCL). None unless a test adds one.
std::mutex nvml_listed_mu;
std::map<uint32_t, std::set<std::string>> nvml_listed;

attribution::AttributionOptions options() {
  attribution::AttributionOptions o;
  o.gpu_processes = [] {
    std::lock_guard lock(nvml_listed_mu);
    return nvml_listed;
  };
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
    agent_ = new attribution::AttributionPlane(options());
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
  static inline attribution::AttributionPlane* agent_ = nullptr;
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

// Issue 29: a process NVML lists that never called CUDA is named from its
// /proc/PID/cgroup, so its NVML time goes to its workload.
TEST_F(CallingPatterns, AGpuUserTheProbesNeverSawIsNamedFromProc) {
  ScopedCgroup cgroup(mounts().v2, test_cgroup("/system.slice/vulkan.service"));
  auto child = start_interactive_tenant({cgroup.dir()}, "print-ready; wait-stdin; exit 0");
  await_ready(*child);
  const auto pid = static_cast<uint32_t>(child->pid());
  {
    std::lock_guard lock(nvml_listed_mu);
    nvml_listed[pid] = {"GPU-calling-patterns"};
  }
  const auto snap = agent_->snapshot();
  {
    std::lock_guard lock(nvml_listed_mu);
    nvml_listed.clear();
  }
  finish_interactive_tenant(*child);
  EXPECT_FALSE(find_workload(snap, "systemd/vulkan.service"));  // the probes never saw it
  auto it = std::find_if(snap.other_processes.begin(), snap.other_processes.end(),
                         [&](const auto& o) { return o.pid == pid; });
  ASSERT_NE(it, snap.other_processes.end());
  EXPECT_EQ(it->account, "systemd/vulkan.service");
  EXPECT_EQ(it->until_us, 0u);  // alive
  EXPECT_GT(it->from_us, 0u);
  // Its NVML samples (stamped now) go to that workload, not to nobody.
  device::DeviceSnapshot dev;
  dev.gpus = {{.index = 0, .uuid = "GPU-calling-patterns"}};
  const auto now_us = static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  dev.process_sm = {{"GPU-calling-patterns", pid, 3.0, now_us}};
  const auto uses = node::process_sm_uses(snap, dev);
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].account, "systemd/vulkan.service");
  EXPECT_EQ(uses[0].gpu, "0");
}

// Known truth end to end: tenants on one GPU, each running a known amount of
// work with its own calling pattern, at the same time; NVML's per-process
// samples come from the NVML simulator, which derives them from the work the
// driver simulator ran (CUDASIM_WORK_DIR, "work_directory"); the ledger splits
// the window. With the samples every tenant's share of the busy cost is within
// 5 points of its share of the work; without them the spans split it, and each
// tenant pays at least the bound docs/ledger.md states.
struct Tenant {
  std::string name;
  int launches;  // of 20 ms each: the real work
  std::string wait;  // how it waits
  // > 1: its launches run in this many processes, one after the other, each
  // gone before the next starts: none is alive at the observation that reads
  // its NVML samples (issue 29: the agent's exit records name its owner).
  int processes = 1;
};

class SharedGpuTruth : public CallingPatterns {
 protected:
  static constexpr int64_t kT0 = 1'800'000'000;
  // The busy cost's shares per tenant (by workload id) of one window.
  std::map<std::string, double> split(const std::vector<Tenant>& tenants, bool nvml_per_process,
                                      std::string* split_source) {
    std::vector<std::string> sources;
    auto shares = split_by({agent_}, tenants, nvml_per_process, &sources);
    *split_source = sources.empty() ? "" : sources.front();
    return shares.empty() ? std::map<std::string, double>{} : shares.front();
  }

  // The same for each plane watching the same tenants, each with a ledger of
  // its own fed the same NVML reads: the planes differ only in what they probe.
  std::vector<std::map<std::string, double>> split_by(const std::vector<attribution::AttributionPlane*>& planes,
                                                      const std::vector<Tenant>& tenants, bool nvml_per_process,
                                                      std::vector<std::string>* split_sources) {
    const auto dir = std::filesystem::temp_directory_path() / ("gl_shared_truth_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "work");
    const std::string config = (dir / "nvml.json").string();
    std::ofstream(config) << R"({"devices": [{"uuid": "GPU-calling-patterns", "utilization": {"gpu": 0},
        "memory": {"total": 1000, "used": 0}, "work_directory": ")" << (dir / "work").string() << "\"}]}";
    ::setenv("GPULEDGER_NVML_SIM_CONFIG", config.c_str(), 1);
    auto nvml = device::NvmlClient::open(GPULEDGER_NVML_SIM);
    ledger::PriceBook prices = ledger::parse_prices("currency: USD\ndefault_per_hour: 3.60\nwindow_seconds: 60\n");
    std::vector<std::unique_ptr<ledger::Store>> stores;
    std::vector<std::unique_ptr<ledger::Accountant>> accountants;
    for (size_t i = 0; i < planes.size(); ++i) {
      stores.push_back(std::make_unique<ledger::Store>((dir / ("ledger" + std::to_string(i) + ".db")).string()));
      accountants.push_back(std::make_unique<ledger::Accountant>(*stores.back(), prices));
    }
    auto observe = [&](double t) {
      device::NvmlPoll poll = nvml->poll("node");
      device::DeviceSnapshot dev;
      dev.gpus = poll.gpus;
      dev.readings = poll.readings;
      if (nvml_per_process) dev.process_sm = poll.process_sm;
      for (size_t i = 0; i < planes.size(); ++i)
        accountants[i]->observe(node::make_observation(t, planes[i]->snapshot(), dev, {}, false, prices));
    };
    observe(kT0 + 1);  // the baseline
    const std::vector<std::string> env = {"CUDASIM_KERNEL_US=20000", "CUDASIM_WORK_DIR=" + (dir / "work").string()};
    std::vector<std::unique_ptr<ScopedCgroup>> cgroups;
    std::vector<std::unique_ptr<simulation::Child>> children;
    for (const auto& tn : tenants) {
      cgroups.push_back(std::make_unique<ScopedCgroup>(mounts().v2, test_cgroup("/system.slice/" + tn.name + ".service")));
      if (tn.processes > 1) continue;
      children.push_back(start_interactive_tenant(
          {cgroups.back()->dir()},
          "init; launch 1 1 1 1 1 1 x" + std::to_string(tn.launches) + "; " + tn.wait + "; print-ready; wait-stdin; exit 0",
          env));
    }
    for (auto& c : children) await_ready(*c);
    // The short-lived processes one after the other, none alive at the next
    // observation (one NVML read covers them all: the client's period is the
    // first gap between reads, process_sm_time.h).
    for (size_t i = 0; i < tenants.size(); ++i)
      for (int k = 0; tenants[i].processes > 1 && k < tenants[i].processes; ++k) {
        const std::string launches = std::to_string(tenants[i].launches / tenants[i].processes);
        EXPECT_EQ(run_tenant({cgroups[i]->dir()}, "init; launch 1 1 1 1 1 1 x" + launches + "; " + tenants[i].wait + "; exit 0",
                             env).exit_code, 0);
        // Its exit event read by every plane (its ring buffer wakes the plane at once).
        const std::string id = "systemd/" + tenants[i].name + ".service";
        for (auto* plane : planes)
          EXPECT_TRUE(eventually([&] {
            const auto snap = plane->snapshot();
            return std::count_if(snap.other_processes.begin(), snap.other_processes.end(),
                                 [&](const auto& o) { return o.account == id; }) > k;
          }));
      }
    observe(kT0 + 30);  // every long-lived tenant alive: its pids are named
    for (auto& c : children) finish_interactive_tenant(*c);
    observe(kT0 + 61);  // closes the window [kT0, kT0 + 60)
    std::vector<std::map<std::string, double>> out;
    for (auto& store : stores) {
      auto windows = store->windows(kT0, kT0 + 60);
      std::map<std::string, double> shares;
      if (windows.size() != 1 || windows[0].busy_micros <= 0) {
        ADD_FAILURE() << "no busy window";
      } else {
        split_sources->push_back(windows[0].split_source);
        for (const auto& c : windows[0].charges)
          if (c.kind == ledger::ChargeKind::kBusy)
            shares[c.account] += static_cast<double>(c.micros) / static_cast<double>(windows[0].busy_micros);
      }
      out.push_back(std::move(shares));
    }
    accountants.clear();
    stores.clear();
    std::filesystem::remove_all(dir);
    return out;
  }

  void expect_shares(const std::vector<Tenant>& tenants, bool nvml, double points) {
    std::string source;
    const auto shares = split(tenants, nvml, &source);
    EXPECT_EQ(source, nvml ? "nvml" : "spans");
    double work = 0;
    for (const auto& tn : tenants) work += tn.launches;
    for (const auto& tn : tenants) {
      const std::string id = "systemd/" + tn.name + ".service";
      const double truth = tn.launches / work, billed = shares.count(id) ? shares.at(id) : 0;
      std::printf("[ shared   ] %-8s %-14s work %5.1f %%  busy cost %5.1f %%  (split by %s)\n", tn.name.c_str(),
                  tn.wait.c_str(), truth * 100, billed * 100, source.c_str());
      if (nvml) EXPECT_NEAR(billed * 100, truth * 100, points) << tn.name;
      // Without per-process data: never below the eBPF-only bound, its share of the work x f / n
      // (f <= 1 here: the floor is at most truth / n).
      else EXPECT_GE(billed, truth / static_cast<double>(tenants.size()) - 1e-9) << tn.name;
    }
  }
};

TEST_F(SharedGpuTruth, TwoTenantsEveryPatternWithNvmlWithinFivePoints) {
  for (const std::string& wait : {"sync-thread", "sync-ctx-thread", "query", "event-query", "sleep-ms 300"}) {
    expect_shares({{"honest", 10, "sync"}, {"evader", 10, wait}}, true, 5);
  }
}

TEST_F(SharedGpuTruth, ThreeTenantsUnequalWorkWithNvmlWithinFivePoints) {
  expect_shares({{"small", 5, "sync-thread"}, {"medium", 10, "sleep-ms 300"}, {"large", 15, "query"}}, true, 5);
}

TEST_F(SharedGpuTruth, WorkInShortLivedProcessesIsBilledToItsTenant) {
  // 90 % of the work in 9 processes of about 0.2 s each, 10 % in one long
  // process: each pays its share of the work, within 5 points.
  expect_shares({{"attacker", 90, "sync-thread", 9}, {"neighbour", 10, "sync"}}, true, 5);
}

// Issue 28: the billing probe set (no launch, copy or wait probed) bills a
// time-sliced GPU as the full set does, within a point per tenant, whether the
// tenants wait on the launching thread, on another thread, or never, and also
// when a tenant's work runs in short-lived processes: a plane of each set
// watches the same tenants and its ledger reads the same NVML samples. These
// tenants allocate nothing (kernels on module globals): under billing nothing
// of theirs is counted, yet their processes still name them.
TEST_F(SharedGpuTruth, TheBillingSetBillsAsTheFullSetWithinOnePoint) {
  GL_REQUIRE_BPF();
  attribution::AttributionOptions o = options();
  o.probe_set = probes::ProbeSet::kBilling;
  attribution::AttributionPlane billing(o);
  billing.start();
  ASSERT_EQ(billing.snapshot().self.probe_set, probes::ProbeSet::kBilling);
  for (const auto& tenants : std::vector<std::vector<Tenant>>{
           {{"launcher", 10, "sync"}, {"waiter", 10, "sync-thread"}, {"never", 10, "sleep-ms 300"}},
           {{"attacker", 90, "sync-thread", 9}, {"neighbour", 10, "sync"}}}) {
    std::vector<std::string> sources;
    const auto shares = split_by({agent_, &billing}, tenants, true, &sources);
    ASSERT_EQ(shares.size(), 2u);
    EXPECT_EQ(sources, (std::vector<std::string>{"nvml", "nvml"}));
    double work = 0;
    for (const auto& tn : tenants) work += tn.launches;
    for (const auto& tn : tenants) {
      const std::string id = "systemd/" + tn.name + ".service";
      const double full = shares[0].count(id) ? shares[0].at(id) : 0, bill = shares[1].count(id) ? shares[1].at(id) : 0;
      std::printf("[ sets     ] %-9s %-13s work %5.1f %%  full %5.1f %%  billing %5.1f %%\n", tn.name.c_str(),
                  tn.wait.c_str(), tn.launches / work * 100, full * 100, bill * 100);
      EXPECT_NEAR(bill * 100, full * 100, 1.0) << tn.name;
      EXPECT_NEAR(bill * 100, tn.launches / work * 100, 5.0) << tn.name << ": billing's share against the work";
    }
  }
  billing.stop();
}

TEST_F(SharedGpuTruth, WithoutNvmlTheSpansSplitItAboveTheBound) {
  expect_shares({{"honest", 10, "sync"}, {"evader", 10, "sync-thread"}}, false, 0);
  expect_shares({{"small", 5, "sync-thread"}, {"medium", 10, "sleep-ms 300"}, {"large", 15, "event-query"}}, false, 0);
}

}  // namespace
}  // namespace gpuledger::testing
