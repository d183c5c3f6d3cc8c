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

// The tenant's launches over every stored window, and the latest window end.
struct Charged {
  uint64_t launches = 0;
  int64_t last_end = 0;
};

// An agent with pins and a store of the test's own, and a tenant that made
// 1,000 launches under it, charged in a stored window; `rest` is the tenant's
// script after them, each step started by a line on its stdin.
class StoredTenant {
  // Declared in this order so the tenant ends first and the pins go last.
  Scratch scratch_;
  PinDir pins_;
  std::string id_;

 public:
  std::unique_ptr<Agent> first;

 private:
  std::unique_ptr<simulation::ScopedCgroup> cg_;

 public:
  std::unique_ptr<simulation::Child> tenant;

  StoredTenant(const std::string& tag, const std::string& rest)
      : scratch_(tag), pins_(tag), id_("systemd/" + tag + ".service") {
    first = start_agent();
    cg_ = std::make_unique<simulation::ScopedCgroup>(cgroup_v2(), test_cgroup("/system.slice/" + tag + ".service"));
    tenant = std::make_unique<simulation::Child>(
        std::vector<std::string>{cudasim_binary(),
                                 "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x1000; print-ready; " + rest},
        simulation::SpawnOptions{{cg_->dir()}, {}, true, true});
    EXPECT_EQ(tenant->read_line().rfind("READY", 0), 0u);
    step();
    EXPECT_TRUE(eventually([&] { return charged().launches == 1000; }, std::chrono::seconds(15))) << first->log();
  }
  ~StoredTenant() {
    tenant->write_line("go");
    tenant->close_stdin();
    tenant->read_all();
    EXPECT_EQ(tenant->wait(), 0);
  }
  std::unique_ptr<Agent> start_agent() {
    write_simulated_node(scratch_, kWindow);
    auto args = simulated_node_agent_args(scratch_, scratch_.path("ledger.db"));
    args.insert(args.end(), {"--bpf-pin-dir", pins_.path(), "--keep-pins-on-exit"});  // SIGTERM: a restart
    return std::make_unique<Agent>(args);
  }
  // Lets the tenant run its next step and waits for it to end.
  void step() {
    tenant->write_line("go");
    EXPECT_EQ(tenant->read_line().rfind("READY", 0), 0u);
  }
  Charged charged() const {
    Charged c;
    ledger::Store store(scratch_.path("ledger.db"), ledger::Store::Mode::kReadOnly);
    for (const auto& w : store.windows(0, INT64_MAX)) {
      c.last_end = std::max(c.last_end, w.end);
      for (const auto& a : w.accounts)
        if (a.account == id_) c.launches += a.launches;
    }
    return c;
  }
  const std::string& id() const { return id_; }
  const PinDir& pins() const { return pins_; }
};

double launches(int port, const std::string& id) {
  return sample_value(parse_exposition(get_body(port, "/metrics")), "gpuledger_cuda_kernel_launches_total",
                      {{"workload", id}, {"UUID", kSimulatedGpu}})
      .value_or(-1);
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
  // 1,000 launches with the first agent; 2,000 over ~1.5 s across the stop
  // and the restart; 2,000 with the second agent: 5,000 in all.
  StoredTenant t(signal == SIGKILL ? "lbkill" : "lbterm", "wait-stdin; " + spread_launches(500) +
                                                              "print-ready; wait-stdin; launch 1 1 1 1 1 1 x2000; "
                                                              "print-ready; wait-stdin");
  ASSERT_FALSE(::testing::Test::HasFailure());
  t.tenant->write_line("go");  // launches through the stop and the restart
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop_agent(t.first, signal);
  const double stopped_at = unix_now();
  auto second = t.start_agent();
  ASSERT_EQ(t.tenant->read_line().rfind("READY", 0), 0u);
  t.step();
  ASSERT_TRUE(eventually([&] { return launches(second->port(), t.id()) == 5000; }, std::chrono::seconds(10)))
      << second->log();
  // A window closed by an observation after that: every launch is in the
  // store. (A graceful stop stored the window it stopped in, whose end is
  // later than the stop: the second agent closes only later ones.)
  const double all_counted = std::max(unix_now(), stopped_at + kWindow);
  ASSERT_TRUE(eventually([&] { return static_cast<double>(t.charged().last_end) > all_counted; },
                         std::chrono::seconds(3 * kWindow + 5)))
      << second->log();
  EXPECT_EQ(t.charged().launches, 5000u) << "every launch charged, once\n" << second->log();
  EXPECT_NE(second->log().find("ledger: took over the counter baseline"), std::string::npos) << second->log();
}

INSTANTIATE_TEST_SUITE_P(Signals, LedgerAcrossARestart, ::testing::Values(SIGKILL, SIGTERM),
                         [](const auto& info) { return std::string(info.param == SIGKILL ? "Sigkill" : "Sigterm"); });

// Pins removed while the agent was down (a replaced layout, an uninstall): the
// counters start again from 0 in new maps, so the stored baseline is not theirs
// and must not be subtracted from them.
TEST(LedgerAcrossARestart, NewCountersDoNotUseTheStoredBaseline) {
  GL_REQUIRE_BPF();
  StoredTenant t("lbnew", "wait-stdin; launch 1 1 1 1 1 1 x2000; print-ready; wait-stdin");
  ASSERT_FALSE(::testing::Test::HasFailure());
  stop_agent(t.first, SIGKILL);
  probes::remove_pin_tree(t.pins().path());
  auto second = t.start_agent();
  ASSERT_TRUE(eventually([&] { return second->log().find("are not those of the stored baseline") != std::string::npos; },
                         std::chrono::seconds(5)))
      << second->log();
  t.step();
  // The new counters hold the 2,000 made since: all charged (a stale baseline
  // of 1,000 would have charged 1,000 of them).
  ASSERT_TRUE(eventually([&] { return t.charged().launches == 3000; }, std::chrono::seconds(2 * kWindow + 5)))
      << t.charged().launches << "\n" << second->log();
  EXPECT_EQ(second->log().find("took over the counter baseline"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::testing
