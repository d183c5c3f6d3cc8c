// Issue 29's attack end to end: a tenant names its cgroup with ESC, BEL and a
// right-to-left override (the kernel accepts them; a delegated subtree lets a
// tenant make one), runs CUDA work there, the real agent bills it into a
// ledger, and the operator runs the real `gpuledger report`: the table and
// --wide write no raw byte of the name, JSON keeps it exactly.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "device/nvml_client.h"
#include "ledger/accountant.h"
#include "ledger/store.h"
#include "node/observation_inputs.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using simulation::ScopedCgroup;

std::string run_report(const std::string& args) {
  std::string out;
  FILE* p = ::popen((std::string(GPULEDGER_BINARY) + " report " + args + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(HostileCgroupName, ReachesTheOperatorInert) {
  GL_REQUIRE_BPF();
  constexpr int64_t kT0 = 1'800'000'000;  // 2027-01-15T08:00:00Z
  const auto dir = fs::temp_directory_path() / ("gl_hostile_cgroup_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string config = (dir / "nvml.json").string();
  std::ofstream(config) << R"({"devices": [{"uuid": "GPU-hostile-name", "utilization": {"gpu": 0},
      "memory": {"total": 1000, "used": 0}}]})";
  ::setenv("GPULEDGER_NVML_SIM_CONFIG", config.c_str(), 1);
  auto nvml = device::NvmlClient::open(GPULEDGER_NVML_SIM);
  ASSERT_TRUE(nvml);

  attribution::AttributionOptions options;
  options.cuda_libs = {kSimLib};
  options.classifier.cgroup_roots = {test_cgroup("")};
  attribution::AttributionPlane agent(options);
  agent.start();
  const std::string unit = "evil\x1b[2J\x1b]0;pwned\x07\xE2\x80\xAE.service";
  const std::string id = "systemd/" + unit;
  const std::string store_path = (dir / "ledger.db").string();
  {
    ledger::Store store(store_path);
    const ledger::PriceBook prices = ledger::parse_prices("currency: USD\ndefault_per_hour: 3.60\nwindow_seconds: 60\n");
    ledger::Accountant acc(store, prices);
    auto observe = [&](double t) {
      device::NvmlPoll poll = nvml->poll("node");
      device::DeviceSnapshot dev;
      dev.gpus = poll.gpus;
      dev.readings = poll.readings;
      acc.observe(node::make_observation(t, agent.snapshot(), dev, {}, false, prices));
    };
    observe(kT0 + 1);
    ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/" + unit));  // the kernel takes the name
    ASSERT_EQ(run_tenant({cg.dir()}, "init; launch 1 1 1 1 1 1 x3", {}, {"--quiet"}).exit_code, 0);
    ASSERT_TRUE(eventually([&] {
      const auto* w = find_workload(agent.snapshot(), id);
      return w && w->usage.counters.launches == 3;
    }));
    observe(kT0 + 30);
    observe(kT0 + 61);  // closes the window [kT0, kT0 + 60)
  }
  agent.stop();

  const std::string range = " --store " + store_path + " --from 2027-01-15T08:00:00Z --to 2027-01-15T08:01:00Z --by workload";
  const std::string shown = "systemd/evil\\x1b[2J\\x1b]0;pwned\\x07\\u202e.service";
  for (const char* wide : {"", " --wide"}) {
    const std::string table = run_report(range + wide);
    EXPECT_NE(table.find(shown), std::string::npos) << table;
    EXPECT_EQ(table.find('\x1b'), std::string::npos) << wide;
    EXPECT_EQ(table.find('\x07'), std::string::npos) << wide;
    EXPECT_EQ(table.find("\xE2\x80\xAE"), std::string::npos) << wide;
  }
  const std::string json = run_report(range + " --format json");
  bool exact = false;
  const auto parsed = nlohmann::json::parse(json);
  for (const auto& row : parsed["rows"]) exact = exact || row["key"] == id;
  EXPECT_TRUE(exact) << json;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::testing
