// Issue 10, item 5: with 10,000 workloads appearing in a burst, 2,977 first
// calls went to `__overflow__` (workload_entry_allocation_failed): the
// workload map was allocated on demand, and the kernel's allocator cache ran
// dry. Now the map is preallocated: sized for the workloads, no call is lost.
//
// The driver is cheaper than 10,000 processes and takes the same kernel path:
// a few forked workers, released at once, walking through 10,000 fresh
// cgroups (workload_walk.h).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "bpf_requirement.h"
#include "reliability_support.h"
#include "sim_library.h"
#include "simulation/tenant.h"
#include "workload_walk.h"

namespace gpuledger::testing {
namespace {

constexpr int kWorkloads = 10000;
constexpr int kWorkers = 4;
constexpr int kLaunchesEach = 3;

TEST(WorkloadBurst, TenThousandNewWorkloadsLoseNoCallToOverflow) {
  GL_REQUIRE_BPF();
  const auto started = std::chrono::steady_clock::now();
  bench::SimLibrary lib(sim_library());  // a private copy: no other probe lands on it
  Agent agent({"--no-discovery", "--cuda-lib", lib.path(), "--store", "", "--max-workloads",
               std::to_string(kWorkloads + kWorkloads / 5)});

  simulation::ScopedCgroup root(cgroup_v2(), test_cgroup("/burst"));
  simulation::ScopedCgroup home(cgroup_v2(), test_cgroup("/burst-home"));
  const auto dirs = make_workload_cgroups(root.dir(), kWorkloads);
  struct Remove {
    const std::vector<std::string>& dirs;
    ~Remove() { remove_cgroups(dirs); }
  } remove{dirs};
  const double burst_seconds = walk_workloads(lib, dirs, home.dir(), kWorkers, kLaunchesEach);

  // Every workload is listed with exactly its launches; none went to overflow.
  std::map<std::string, uint64_t> launches;
  uint64_t overflow = 0;
  auto read_workloads = [&] {
    launches.clear();
    overflow = 0;
    auto json = nlohmann::json::parse(get_body(agent.port(), "/api/v1/workloads"));
    for (const auto& w : json["workloads"]) {
      const uint64_t n = w["counters"]["kernel_launches"].get<uint64_t>();
      if (w["workload"] == "__overflow__") overflow += n;
      for (const auto& path : w["cgroup_paths"])
        if (path.get<std::string>().rfind(root.path() + "/", 0) == 0) launches[path.get<std::string>()] += n;
    }
    return launches.size() == static_cast<size_t>(kWorkloads) || overflow != 0;
  };
  ASSERT_TRUE(eventually(read_workloads, std::chrono::milliseconds(60000)))
      << launches.size() << " of " << kWorkloads << " workloads listed";
  const std::string metrics = get_body(agent.port(), "/metrics");
  ASSERT_NE(metrics.find("gpuledger_bpf_overflow_total{reason=\"workload_entry_allocation_failed\"} "),
            std::string::npos);
  EXPECT_EQ(overflow, 0u) << "launches counted under __overflow__";
  EXPECT_EQ(metric_value(metrics, "gpuledger_bpf_overflow_total{reason=\"workload_entry_allocation_failed\"}"), 0u);
  EXPECT_EQ(metric_value(metrics, "gpuledger_bpf_overflow_total{reason=\"workload_map_full\"}"), 0u);
  EXPECT_EQ(launches.size(), static_cast<size_t>(kWorkloads));
  size_t exact = 0;
  for (const auto& [path, n] : launches) exact += n == kLaunchesEach;
  EXPECT_EQ(exact, static_cast<size_t>(kWorkloads)) << "workloads with exactly " << kLaunchesEach << " launches";
  std::printf("[ burst ] %d new workloads from %d workers in %.2f s: %zu counted exactly, %llu launches in "
              "__overflow__, %llu new-workload events dropped (test %.1f s)\n",
              kWorkloads, kWorkers, burst_seconds, exact, static_cast<unsigned long long>(overflow),
              static_cast<unsigned long long>(metric_value(metrics, "gpuledger_events_dropped_total{source=\"probes\"}")),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace
}  // namespace gpuledger::testing
