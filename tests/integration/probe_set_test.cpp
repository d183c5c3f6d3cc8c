// The probe sets end to end, as root, with the real BPF programs: under
// --probe-set billing the simulator's launches, copies, memsets and waits hit
// no probe (none counted), while allocations, frees and live VRAM come out
// exactly as under full for the same tenant script.
#include <gtest/gtest.h>

#include <filesystem>

#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
using simulation::ScopedCgroup;

constexpr char kScript[] =
    "init; mem-create 2097152; alloc-async 8192; alloc 1048576; htod 4096 x3; launch 2 3 4 8 8 2 x5; "
    "memset 256 x2; sync x2; dtoh 1000; free-all";

attribution::AttributionOptions options_for(probes::ProbeSet set) {
  attribution::AttributionOptions options;
  options.cuda_libs = {kSimLib};
  options.discover = false;
  options.probe_set = set;
  options.classifier.cgroup_roots = {test_cgroup("")};
  return options;
}

// Probes (entry and return parts) the plan of `set` puts on the simulator.
size_t planned_parts(bool hot_path) {
  probes::CallNames names;
  size_t parts = 0;
  for (const auto& spec : probes::plan_probes(probes::read_dynamic_functions(kSimLib), names, {.hot_path = hot_path}))
    parts += spec.with_return ? 2 : 1;
  return parts;
}

probes::Usage usage_under(probes::ProbeSet set, const std::string& unit) {
  attribution::AttributionPlane plane(options_for(set));
  plane.start();
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/" + unit));
  EXPECT_EQ(plane.health().probes_attached, planned_parts(set == probes::ProbeSet::kFull));
  EXPECT_EQ(plane.snapshot().self.probe_set, set);
  EXPECT_EQ(run_tenant({cg.dir()}, kScript).exit_code, 0);
  probes::Usage usage;
  EXPECT_TRUE(eventually([&] {
    const auto* w = find_workload(plane.snapshot(), "systemd/" + unit);
    if (!w || w->usage.counters.freed_bytes < w->usage.counters.allocated_bytes || w->usage.counters.allocations < 3)
      return false;
    usage = w->usage;
    return true;
  })) << "no counts for " << unit;
  plane.stop();
  return usage;
}

TEST(ProbeSetBilling, TheHotPathIsNotProbedAndTheMemoryCountsAreThoseOfFull) {
  GL_REQUIRE_BPF();
  ASSERT_LT(planned_parts(false), planned_parts(true) / 2);
  const probes::Usage billing = usage_under(probes::ProbeSet::kBilling, "billing-set.service");
  const probes::Usage full = usage_under(probes::ProbeSet::kFull, "full-set.service");
  const gl_counters& b = billing.counters;
  const gl_counters& f = full.counters;
  // Full saw the hot path...
  EXPECT_EQ(f.launches, 5u);
  EXPECT_EQ(f.memcpy_calls[GL_DIR_HTOD], 3u);
  EXPECT_EQ(f.memsets, 2u);
  EXPECT_EQ(f.syncs, 2u);
  // ...billing none of it.
  EXPECT_EQ(b.launches, 0u);
  EXPECT_EQ(b.launched_threads, 0u);
  for (int d = 0; d < GL_DIR_COUNT; ++d) EXPECT_EQ(b.memcpy_calls[d] + b.memcpy_bytes[d], 0u) << d;
  EXPECT_EQ(b.memsets, 0u);
  EXPECT_EQ(b.syncs, 0u);
  EXPECT_EQ(b.sync_ns, 0u);
  EXPECT_EQ(b.busy_ns, 0u);
  // The same memory, to the byte.
  EXPECT_EQ(b.allocations, 3u);
  EXPECT_EQ(b.allocated_bytes, 1048576u + 8192u + 2097152u);
  EXPECT_EQ(b.allocations, f.allocations);
  EXPECT_EQ(b.allocated_bytes, f.allocated_bytes);
  EXPECT_EQ(b.freed_bytes, f.freed_bytes);
  EXPECT_EQ(billing.live_bytes(), 0u);
  EXPECT_EQ(b.untracked_frees, f.untracked_frees);
}

}  // namespace
}  // namespace gpuledger::testing
