// Issue 10, item 7: the smaller defects, each against the agent binary as it
// runs on a node (real BPF, real cgroups and processes, as root).
#include <gtest/gtest.h>

#include <fstream>

#include "bpf_requirement.h"
#include "cli_process.h"
#include "reliability_support.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {
namespace {

// `--store ledger.db` (a bare file name) aborted with an uncaught filesystem_error.
TEST(SmallDefects, ABareStoreFileNameIsInTheWorkingDirectory) {
  GL_REQUIRE_BPF();
  Scratch scratch("bare");
  InDirectory cwd(scratch.dir());
  Agent agent({"--no-discovery", "--cuda-lib", sim_library(), "--store", "ledger.db"});
  EXPECT_NE(get_body(agent.port(), "/metrics").find("\ngpuledger_ledger_info{currency=\"USD\"} 1\n"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(scratch.dir() / "ledger.db"));
  EXPECT_TRUE(fs::exists(scratch.dir() / "ledger.db.lock"));
}

// `--opt=` took the next flag as its value: `--store= --no-discovery` stored
// the ledger in a file named "--no-discovery" and left discovery on.
TEST(SmallDefects, AnEmptyAssignmentIsAnEmptyValue) {
  GL_REQUIRE_BPF();
  Scratch scratch("empty");
  InDirectory cwd(scratch.dir());
  Agent agent({"--cuda-lib", sim_library(), "--store=", "--no-discovery"});
  EXPECT_FALSE(fs::exists(scratch.dir() / "--no-discovery"));
  EXPECT_EQ(get_body(agent.port(), "/metrics").find("gpuledger_ledger_info"), std::string::npos)
      << "an empty --store turns the ledger off";
  EXPECT_EQ(agent.log().find("first scan of executable mappings"), std::string::npos) << "--no-discovery was read";
  // An option that refuses an empty value says so, instead of eating the next flag.
  auto r = run(gpuledger_binary() + " agent --runtime-probes= --no-discovery");
  EXPECT_EQ(r.status, 105) << r.out;
  EXPECT_NE(r.out.find("--runtime-probes:  not in {off,auto,on}"), std::string::npos) << r.out;
}

// A --config without a `cost:` section exited with "prices ...: unknown key 'team'".
TEST(SmallDefects, AConfigWithoutCostSectionRunsWithoutPrices) {
  GL_REQUIRE_BPF();
  Scratch scratch("config");
  std::ofstream(scratch.path("agent.yaml")) << "team:\n  pod_label_key: owner\nteams:\n  - match: cgroup_prefix\n"
                                               "    pattern: /research\n    team: research\n";
  Agent agent({"--no-discovery", "--cuda-lib", sim_library(), "--config", scratch.path("agent.yaml"), "--store",
               scratch.path("ledger.db")});
  EXPECT_NE(agent.log().find("ledger: no GPU prices are configured"), std::string::npos) << agent.log();
  EXPECT_EQ(agent.log().find("unknown key"), std::string::npos) << agent.log();
}

// A full workload map was only a counter: now the agent says so in its log.
TEST(SmallDefects, AFullWorkloadMapIsLogged) {
  GL_REQUIRE_BPF();
  // One entry: the overflow bucket takes it, so the tenant's calls overflow.
  Agent agent({"--no-discovery", "--cuda-lib", sim_library(), "--store", "", "--max-workloads", "1"});
  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/full.service"));
  simulation::Child tenant({cudasim_binary(), "init; launch 1 1 1 1 1 1 x5"}, {{cg.dir()}, {}, false, true});
  tenant.read_all();
  ASSERT_EQ(tenant.wait(), 0);
  EXPECT_TRUE(eventually(
      [&] {
        return agent.log().find("the workload map is full (1 entries, --max-workloads): calls of new workloads are "
                                "counted under __overflow__") != std::string::npos;
      },
      std::chrono::milliseconds(5000)))
      << agent.log();
}

}  // namespace
}  // namespace gpuledger::testing
