// Issue 10: the pinned counters survived a restart, but the ledger took the
// restarted agent's first observation as its baseline, so what was counted
// between the last stored window and that observation (calls made while the
// agent was down, the tail a SIGKILL cut off) was charged to no window. Here
// the agent binary (real BPF, the simulated driver and NVML, a store and pins
// of this test's own) is stopped while a tenant launches, and restarted.
#include <signal.h>

#include <algorithm>
#include <memory>

#include "bpf_requirement.h"
#include "exposition_parser.h"
#include "ledger/store.h"
#include "reliability_support.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {
namespace {

constexpr int kWindow = 5;  // seconds: windows close often, the test stays short

std::vector<std::string> agent_args(const Scratch& s, const PinDir& pins) {
  write_simulated_node(s, kWindow);
  auto args = simulated_node_agent_args(s, s.path("ledger.db"));
  args.insert(args.end(), {"--bpf-pin-dir", pins.path()});
  return args;
}

// The tenant's launches over every stored window, and the latest window end.
struct Charged {
  uint64_t launches = 0;
  int64_t last_end = 0;
};
Charged charged(const Scratch& s, const std::string& account) {
  Charged c;
  ledger::Store store(s.path("ledger.db"), ledger::Store::Mode::kReadOnly);
  for (const auto& w : store.windows(0, INT64_MAX)) {
    c.last_end = std::max(c.last_end, w.end);
    for (const auto& a : w.accounts)
      if (a.account == account) c.launches += a.launches;
  }
  return c;
}

double launches(int port, const std::string& id) {
  return sample_value(parse_exposition(get_body(port, "/metrics")), "gpuledger_cuda_kernel_launches_total",
                      {{"workload", id}, {"UUID", kSimulatedGpu}})
      .value_or(-1);
}

void stop(std::unique_ptr<Agent>& agent, int signal) {
  if (signal == SIGKILL) ::kill(agent->pid(), SIGKILL);  // the destructor then reaps it
  agent.reset();                                          // SIGTERM: a graceful stop, waited for
}

std::string spread_launches(int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += "launch 1 1 1 1 1 1 x4; sleep-ms 3; ";
  return out;
}

class LedgerAcrossARestart : public ::testing::TestWithParam<int> {};

TEST_P(LedgerAcrossARestart, ChargesEveryLaunchOnce) {
  GL_REQUIRE_BPF();
  const int signal = GetParam();
  const std::string tag = signal == SIGKILL ? "lbkill" : "lbterm";
  Scratch scratch(tag);
  PinDir pins(tag);
  const std::string id = "systemd/" + tag + ".service";
  auto first = std::make_unique<Agent>(agent_args(scratch, pins));
  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/" + tag + ".service"));
  // 1,000 launches with the first agent; 2,000 over ~1.5 s across the stop
  // and the restart; 2,000 with the second agent: 5,000 in all.
  simulation::Child tenant({cudasim_binary(), "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x1000; print-ready; "
                                              "wait-stdin; " + spread_launches(500) +
                                                  "print-ready; wait-stdin; launch 1 1 1 1 1 1 x2000; print-ready; "
                                                  "wait-stdin"},
                           {{cg.dir()}, {}, true, true});
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  // A window charged with them is stored (with the counters it was charged up to).
  ASSERT_TRUE(eventually([&] { return charged(scratch, id).launches == 1000; }, std::chrono::seconds(15)))
      << first->log();

  tenant.write_line("go");  // launches through the stop and the restart
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop(first, signal);
  const double stopped_at = unix_now();
  auto second = std::make_unique<Agent>(agent_args(scratch, pins));
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] { return launches(second->port(), id) == 5000; }, std::chrono::seconds(10)))
      << second->log();
  // A window closed by an observation after that: every launch is in the
  // store. (A graceful stop stored the window it stopped in, whose end is
  // later than the stop: the second agent closes only later ones.)
  const double all_counted = std::max(unix_now(), stopped_at + kWindow);
  ASSERT_TRUE(eventually([&] { return static_cast<double>(charged(scratch, id).last_end) > all_counted; },
                         std::chrono::seconds(3 * kWindow + 5)))
      << second->log();
  EXPECT_EQ(charged(scratch, id).launches, 5000u) << "every launch charged, once\n" << second->log();
  EXPECT_NE(second->log().find("ledger: took over the counter baseline"), std::string::npos) << second->log();
  tenant.write_line("go");
  tenant.close_stdin();
  tenant.read_all();
  EXPECT_EQ(tenant.wait(), 0);
}

INSTANTIATE_TEST_SUITE_P(Signals, LedgerAcrossARestart, ::testing::Values(SIGKILL, SIGTERM),
                         [](const auto& info) { return std::string(info.param == SIGKILL ? "Sigkill" : "Sigterm"); });

// Pins removed while the agent was down (a replaced layout, an uninstall): the
// counters start again from 0 in new maps, so the stored baseline is not theirs
// and must not be subtracted from them.
TEST(LedgerAcrossARestart, NewCountersDoNotUseTheStoredBaseline) {
  GL_REQUIRE_BPF();
  const std::string tag = "lbnew";
  Scratch scratch(tag);
  PinDir pins(tag);
  const std::string id = "systemd/" + tag + ".service";
  auto first = std::make_unique<Agent>(agent_args(scratch, pins));
  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/" + tag + ".service"));
  simulation::Child tenant({cudasim_binary(), "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x1000; print-ready; "
                                              "wait-stdin; launch 1 1 1 1 1 1 x2000; print-ready; wait-stdin"},
                           {{cg.dir()}, {}, true, true});
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] { return charged(scratch, id).launches == 1000; }, std::chrono::seconds(15)))
      << first->log();
  stop(first, SIGKILL);
  probes::remove_pin_tree(pins.path());
  auto second = std::make_unique<Agent>(agent_args(scratch, pins));
  ASSERT_TRUE(eventually([&] { return second->log().find("are not those of the stored baseline") != std::string::npos; },
                         std::chrono::seconds(5)))
      << second->log();
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  // The new counters hold the 2,000 made since: all charged (a stale baseline
  // of 1,000 would have charged 1,000 of them).
  ASSERT_TRUE(eventually([&] { return charged(scratch, id).launches == 3000; }, std::chrono::seconds(2 * kWindow + 5)))
      << charged(scratch, id).launches << "\n" << second->log();
  EXPECT_EQ(second->log().find("took over the counter baseline"), std::string::npos);
  tenant.write_line("go");
  tenant.close_stdin();
  tenant.read_all();
  EXPECT_EQ(tenant.wait(), 0);
}

}  // namespace
}  // namespace gpuledger::testing
