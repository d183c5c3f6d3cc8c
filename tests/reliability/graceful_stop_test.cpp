// Issue 10, item 2: SIGTERM stored nothing of the window in progress, and the
// restarted agent stored it as all idle, charged to __unallocated__. Here the
// agent binary (real BPF, the simulated driver and NVML) is stopped with
// SIGTERM in the middle of a window and restarted within it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "bpf_requirement.h"
#include "exposition_parser.h"
#include "ledger/store.h"
#include "reliability_support.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {
namespace {

constexpr int kWindow = 10;  // seconds: room for a stop and a restart inside one
const std::string kGpu = kSimulatedGpu;

// 50 % busy: each 10 s window costs 10'000 micro-USD at 3.60/h, 5'000 busy and 5'000 idle.
void write_node(const Scratch& s) { write_simulated_node(s, kWindow); }
std::vector<std::string> agent_args(const Scratch& s) { return simulated_node_agent_args(s, s.path("ledger.db")); }

std::vector<ledger::WindowRecord> windows(const Scratch& s, int64_t start) {
  ledger::Store store(s.path("ledger.db"), ledger::Store::Mode::kReadOnly);
  return store.windows(start, start + 1);
}

const ledger::AccountRecord* account(const ledger::WindowRecord& w, const std::string& name) {
  for (const auto& a : w.accounts)
    if (a.account == name) return &a;
  return nullptr;
}

double launches(int port, const std::string& workload) {
  auto value = sample_value(parse_exposition(get_body(port, "/metrics")), "gpuledger_cuda_kernel_launches_total",
                            {{"workload", workload}});
  return value.value_or(-1);
}

TEST(GracefulStop, SigtermStoresTheWindowAndARestartWithinItChargesTheTenant) {
  GL_REQUIRE_BPF();
  Scratch scratch("stop");
  write_node(scratch);
  // Start early in a window, so the stop and the restart both fall inside it.
  if (std::fmod(unix_now(), kWindow) > 3) sleep_until_unix(std::ceil(unix_now() / kWindow) * kWindow + 0.2);
  const int64_t window = static_cast<int64_t>(unix_now()) / kWindow * kWindow;
  const std::string id = "systemd/stop.service";

  auto first = std::make_unique<Agent>(agent_args(scratch));
  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/stop.service"));
  simulation::Child tenant({cudasim_binary(), "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x5; print-ready; "
                                              "wait-stdin; launch 1 1 1 1 1 1 x7; print-ready; wait-stdin"},
                           {{cg.dir()}, {}, true, true});
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] { return launches(first->port(), id) == 5; }, std::chrono::milliseconds(5000)));
  ASSERT_TRUE(eventually([&] { return get_body(first->port(), "/metrics").find(kGpu) != std::string::npos; },
                         std::chrono::milliseconds(5000)))
      << "the device plane names the GPU";
  const double stopped_at = unix_now();
  first.reset();  // SIGTERM, and waits for the exit
  ASSERT_LT(unix_now(), static_cast<double>(window + kWindow - 3)) << "too slow to restart within the window";

  // Stored at the stop: what was watched, charged to the tenant who used the GPU.
  auto stored = windows(scratch, window);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].source, "partial");
  EXPECT_GT(stored[0].observed_seconds, 0.0);
  EXPECT_LE(stored[0].observed_seconds, stopped_at + 1 - static_cast<double>(window));
  EXPECT_EQ(stored[0].charges, (std::vector<ledger::Charge>{{id, ledger::ChargeKind::kBusy, 5'000},
                                                            {id, ledger::ChargeKind::kIdle, 5'000}}));
  ASSERT_TRUE(account(stored[0], id));
  EXPECT_EQ(account(stored[0], id)->launches, 5u);
  EXPECT_FALSE(account(stored[0], "__unallocated__"));

  // Restarted within the window: it stays as stored, and what the new agent
  // sees in the rest of it is counted in the next window.
  auto second = std::make_unique<Agent>(agent_args(scratch));
  // Said at the new agent's first observation, which may come after it answers: polled.
  EXPECT_TRUE(eventually(
      [&] {
        return second->log().find("ledger: the window from " + std::to_string(window) +
                                  " was stored when the agent stopped") != std::string::npos;
      },
      std::chrono::milliseconds(5000)))
      << second->log();
  tenant.write_line("go");
  ASSERT_EQ(tenant.read_line().rfind("READY", 0), 0u);
  ASSERT_TRUE(eventually([&] { return launches(second->port(), id) == 7; }, std::chrono::milliseconds(5000)));
  sleep_until_unix(static_cast<double>(window + 2 * kWindow));
  ASSERT_TRUE(eventually([&] { return windows(scratch, window + kWindow).size() == 1; },
                         std::chrono::milliseconds(5000)))
      << second->log();
  auto again = windows(scratch, window);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], stored[0]) << "written once";
  auto next = windows(scratch, window + kWindow)[0];
  EXPECT_EQ(next.source, "live");
  EXPECT_EQ(next.charges, (std::vector<ledger::Charge>{{id, ledger::ChargeKind::kBusy, 5'000},
                                                       {id, ledger::ChargeKind::kIdle, 5'000}}));
  ASSERT_TRUE(account(next, id));
  EXPECT_EQ(account(next, id)->launches, 7u);
  tenant.write_line("go");
  tenant.close_stdin();
  tenant.read_all();
  EXPECT_EQ(tenant.wait(), 0);
}

}  // namespace
}  // namespace gpuledger::testing
