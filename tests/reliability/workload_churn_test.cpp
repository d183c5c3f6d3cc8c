// Issue 10, item 6: nothing grows with workloads that have gone. After two
// batches of 10,000 short-lived workloads the agent held 20k series, a 72 MB
// page and 758 MiB RSS with nothing alive. Now a retired workload leaves
// /metrics, the JSON, the kernel maps and the agent's directory of names.
//
// Batches of short-lived workloads (cgroups made, one worker walking through
// them with a call or two in each, removed) under --retire-after 1s: after
// each, everything per workload is back to where it started.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "bpf_requirement.h"
#include "reliability_support.h"
#include "sim_library.h"
#include "simulation/tenant.h"
#include "workload_walk.h"

namespace gpuledger::testing {
namespace {

constexpr int kBatches = 3;
constexpr int kWorkloadsPerBatch = 1000;

struct Held {
  uint64_t directory = 0, counters = 0, errors = 0, series = 0, retired = 0;
};

Held held_by(int port) {
  const std::string page = get_body(port, "/metrics");
  Held h;
  h.directory = metric_value(page, "gpuledger_workload_directory_entries");
  h.counters = metric_value(page, "gpuledger_bpf_map_entries{map=\"workload_counters\"}");
  h.errors = metric_value(page, "gpuledger_bpf_map_entries{map=\"call_errors\"}");
  h.retired = metric_value(page, "gpuledger_workloads_retired_total");
  for (size_t at = 0; (at = page.find("\ngpuledger_cuda_kernel_launches_total{", at)) != std::string::npos; ++at)
    ++h.series;
  return h;
}

TEST(WorkloadChurn, RetiredWorkloadsLeaveNothingBehind) {
  GL_REQUIRE_BPF();
  const auto started = std::chrono::steady_clock::now();
  bench::SimLibrary lib(sim_library());
  Agent agent({"--no-discovery", "--cuda-lib", lib.path(), "--store", "", "--retire-after", "1s",
               "--ledger-interval-ms", "500"});
  simulation::ScopedCgroup home(cgroup_v2(), test_cgroup("/churn-home"));
  // The workers' own cgroup is a workload too, and stays: the baseline has it.
  walk_workloads(lib, {home.dir()}, home.dir(), 1, 1);
  Held base;
  ASSERT_TRUE(eventually([&] { return (base = held_by(agent.port())).directory == 1; }, std::chrono::seconds(10)));

  uint64_t rss_first = 0, rss_last = 0;
  for (int b = 0; b < kBatches; ++b) {
    simulation::ScopedCgroup root(cgroup_v2(), test_cgroup("/churn" + std::to_string(b)));
    auto dirs = make_workload_cgroups(root.dir(), kWorkloadsPerBatch);
    walk_workloads(lib, dirs, home.dir(), 2, 2);
    Held during;
    ASSERT_TRUE(eventually([&] { return (during = held_by(agent.port())).series == base.series + kWorkloadsPerBatch; },
                           std::chrono::seconds(30)))
        << during.series;
    EXPECT_EQ(during.counters, base.counters + kWorkloadsPerBatch);
    remove_cgroups(dirs);

    Held after;
    ASSERT_TRUE(eventually(
        [&] {
          after = held_by(agent.port());
          return after.series == base.series && after.directory == base.directory &&
                 after.counters == base.counters && after.errors == base.errors;
        },
        std::chrono::seconds(30)))
        << "batch " << b << ": series " << after.series << ", directory " << after.directory << ", counters "
        << after.counters << ", errors " << after.errors;
    EXPECT_EQ(after.retired, static_cast<uint64_t>((b + 1) * kWorkloadsPerBatch));
    // RSS after the agent's malloc_trim (every --ledger-interval-ms).
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    (b == 0 ? rss_first : rss_last) = agent.rss_kib();
  }
  // Later batches cost nothing more: not a byte per gone workload kept (2 KiB
  // each would be 4,000 KiB here). The bound is the heap's noise.
  EXPECT_LE(rss_last, rss_first + 2048) << "RSS after the first batch " << rss_first << " KiB, after the last "
                                        << rss_last << " KiB";
  std::printf("[ churn ] %d x %d short-lived workloads retired: RSS %llu KiB after the first batch, %llu KiB after "
              "the last; directory %llu, map entries %llu (test %.1f s)\n",
              kBatches, kWorkloadsPerBatch, static_cast<unsigned long long>(rss_first),
              static_cast<unsigned long long>(rss_last), static_cast<unsigned long long>(base.directory),
              static_cast<unsigned long long>(base.counters),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace
}  // namespace gpuledger::testing
