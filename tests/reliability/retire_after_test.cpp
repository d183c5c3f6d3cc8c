// Issue 10, item 6: workloads whose cgroup is gone stayed in /metrics and
// /api/v1/workloads forever (20k series after two batches of 10k short-lived
// workloads). Now they leave after --retire-after.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bpf_requirement.h"
#include "reliability_support.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {
namespace {

bool listed(int port, const std::string& id) {
  auto json = nlohmann::json::parse(get_body(port, "/api/v1/workloads"));
  for (const auto& w : json["workloads"])
    if (w["workload"] == id) return true;
  return false;
}

bool on_metrics(int port, const std::string& id) {
  return get_body(port, "/metrics").find("workload=\"" + id + "\"") != std::string::npos;
}

TEST(RetireAfter, AGoneWorkloadLeavesMetricsAndJsonAfterRetireAfter) {
  GL_REQUIRE_BPF();
  Agent agent({"--no-discovery", "--cuda-lib", sim_library(), "--store", "", "--retire-after", "2s"});
  const std::string gone = "systemd/gone.service", alive = "systemd/alive.service";
  simulation::ScopedCgroup alive_cg(cgroup_v2(), test_cgroup("/system.slice/alive.service"));
  simulation::Child staying({cudasim_binary(), "init; launch 1 1 1 1 1 1 x2; print-ready; wait-stdin"},
                            {{alive_cg.dir()}, {}, true, true});
  ASSERT_EQ(staying.read_line().rfind("READY", 0), 0u);
  {
    simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/gone.service"));
    simulation::Child tenant({cudasim_binary(), "init; launch 1 1 1 1 1 1 x3"}, {{cg.dir()}, {}, false, true});
    tenant.read_all();
    ASSERT_EQ(tenant.wait(), 0);
    ASSERT_TRUE(eventually([&] { return listed(agent.port(), gone); }, std::chrono::milliseconds(5000)));
    EXPECT_TRUE(on_metrics(agent.port(), gone));
  }  // the cgroup is removed
  const auto removed = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return !listed(agent.port(), gone) && !on_metrics(agent.port(), gone); },
                         std::chrono::milliseconds(10000)))
      << get_body(agent.port(), "/api/v1/workloads");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - removed).count();
  EXPECT_GE(took, 2.0) << "kept for --retire-after first";
  EXPECT_NE(get_body(agent.port(), "/metrics").find("\ngpuledger_workloads_retired_total 1\n"), std::string::npos);
  EXPECT_TRUE(listed(agent.port(), alive)) << "a workload whose cgroup lives stays";
  staying.write_line("go");
  staying.close_stdin();
  staying.read_all();
  EXPECT_EQ(staying.wait(), 0);
  std::printf("[ retire ] a gone workload left the snapshots %.1f s after its cgroup was removed (--retire-after 2s)\n", took);
}

TEST(RetireAfter, AMalformedDurationIsRefused) {
  GL_REQUIRE_BPF();
  EXPECT_THROW(Agent({"--no-discovery", "--store", "", "--retire-after", "ten minutes"}), std::runtime_error);
}

}  // namespace
}  // namespace gpuledger::testing
