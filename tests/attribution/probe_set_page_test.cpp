// The probe set on /metrics and /api/v1/workloads: gpuledger_probe_set names
// the one in force (both series present), and under billing every counter only
// the hot path feeds is absent - no series, no JSON key - never 0.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "attribution/metrics_page.h"
#include "attribution/snapshot.h"
#include "attribution/workloads_json.h"

namespace gpuledger::attribution {
namespace {

AttributionSnapshot snapshot_under(probes::ProbeSet set) {
  AttributionSnapshot snap;
  WorkloadView w;
  w.workload.id = "systemd/trainer.service";
  w.usage.counters.launches = 5;
  w.usage.counters.syncs = 2;
  w.usage.counters.memcpy_calls[GL_DIR_HTOD] = 3;
  w.usage.counters.allocations = 3;
  w.usage.counters.allocated_bytes = 3154944;
  w.usage.counters.freed_bytes = 1048576;
  w.by_gpu.push_back({"0", "GPU-00000000-1111-2222-3333-444444444444", w.usage, "device"});
  snap.workloads.push_back(w);
  snap.self.probe_set = set;
  snap.self.probe_set_reason = "configured";
  return snap;
}

// The metric names of the page's samples (not its HELP and TYPE lines).
std::multiset<std::string> sampled(const std::string& page) {
  std::multiset<std::string> out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.insert(line.substr(0, line.find_first_of("{ ")));
  return out;
}

const char* const kHotFamilies[] = {
    "gpuledger_cuda_kernel_launches_total", "gpuledger_cuda_launched_threads_total",
    "gpuledger_cuda_graph_launches_total",  "gpuledger_cuda_memsets_total",
    "gpuledger_cuda_memset_bytes_total",    "gpuledger_cuda_syncs_total",
    "gpuledger_cuda_sync_seconds_total",    "gpuledger_cuda_busy_seconds_total",
    "gpuledger_cuda_memcpy_bytes_total",    "gpuledger_cuda_memcpy_total"};

TEST(ProbeSetPage, BothSetSeriesArePresentAndTheOneInForceIsOne) {
  const std::string billing = render_metrics(snapshot_under(probes::ProbeSet::kBilling), 0);
  EXPECT_NE(billing.find("gpuledger_probe_set{set=\"billing\"} 1\n"), std::string::npos) << billing;
  EXPECT_NE(billing.find("gpuledger_probe_set{set=\"full\"} 0\n"), std::string::npos);
  EXPECT_NE(billing.find("# TYPE gpuledger_probe_set gauge\n"), std::string::npos);
  const std::string full = render_metrics(snapshot_under(probes::ProbeSet::kFull), 0);
  EXPECT_NE(full.find("gpuledger_probe_set{set=\"billing\"} 0\n"), std::string::npos);
  EXPECT_NE(full.find("gpuledger_probe_set{set=\"full\"} 1\n"), std::string::npos);
}

TEST(ProbeSetPage, EverySwitchIsCountedByFromToAndReason) {
  auto snap = snapshot_under(probes::ProbeSet::kFull);
  EXPECT_NE(render_metrics(snap, 0).find("# TYPE gpuledger_probe_set_changes_total counter\n"), std::string::npos)
      << "the family is there before the first switch";
  snap.self.probe_set_changes[{"full", "billing", "device_splits"}] = 2;
  snap.self.probe_set_changes[{"billing", "full", "mps"}] = 1;
  const std::string page = render_metrics(snap, 0);
  EXPECT_NE(page.find("gpuledger_probe_set_changes_total{from=\"full\",to=\"billing\",reason=\"device_splits\"} 2\n"),
            std::string::npos) << page;
  EXPECT_NE(page.find("gpuledger_probe_set_changes_total{from=\"billing\",to=\"full\",reason=\"mps\"} 1\n"),
            std::string::npos) << page;
}

TEST(ProbeSetPage, UnderBillingTheHotPathCountersHaveNoSeriesAndTheMemoryOnesDo) {
  const auto billing = sampled(render_metrics(snapshot_under(probes::ProbeSet::kBilling), 0));
  const auto full = sampled(render_metrics(snapshot_under(probes::ProbeSet::kFull), 0));
  for (const char* name : kHotFamilies) {
    EXPECT_EQ(billing.count(name), 0u) << name << " must be absent under billing";
    EXPECT_GT(full.count(name), 0u) << name;
  }
  // One series a family, the workload's one GPU (memcpy: one per direction).
  EXPECT_EQ(full.count("gpuledger_cuda_memcpy_total"), 5u);
  for (const char* name : {"gpuledger_cuda_memory_allocations_total", "gpuledger_cuda_memory_allocated_bytes_total",
                           "gpuledger_cuda_memory_freed_bytes_total", "gpuledger_cuda_memory_live_bytes"}) {
    EXPECT_EQ(billing.count(name), 1u) << name;
    EXPECT_EQ(full.count(name), 1u) << name;
  }
}

TEST(ProbeSetPage, UnderBillingTheApiLeavesTheHotCountersOutAndNamesThem) {
  const nlohmann::json billing = workloads_json(snapshot_under(probes::ProbeSet::kBilling));
  const nlohmann::json full = workloads_json(snapshot_under(probes::ProbeSet::kFull));
  const auto& counters = billing["workloads"][0]["counters"];
  const auto& per_gpu = billing["workloads"][0]["by_gpu"][0]["counters"];
  for (const char* key : {"kernel_launches", "busy_seconds_estimate", "launched_threads", "graph_launches",
                          "memcpy_bytes", "memcpy_calls", "memsets", "memset_bytes", "syncs", "sync_seconds"}) {
    EXPECT_FALSE(counters.contains(key)) << key;
    EXPECT_FALSE(per_gpu.contains(key)) << key;
    EXPECT_TRUE(full["workloads"][0]["counters"].contains(key)) << key;
  }
  EXPECT_EQ(counters["memory_allocations"], 3);
  EXPECT_EQ(counters["memory_live_bytes"], 3154944 - 1048576);
  EXPECT_EQ(per_gpu["memory_allocated_bytes"], 3154944);
  EXPECT_EQ(full["workloads"][0]["counters"]["kernel_launches"], 5);
  EXPECT_EQ(billing["probe_set"]["set"], "billing");
  EXPECT_EQ(billing["probe_set"]["reason"], "configured");
  EXPECT_EQ(billing["probe_set"]["not_probed"].size(), 10u);
  EXPECT_EQ(billing["probe_set"]["not_probed_means"], "not probed (probe set billing)");
  EXPECT_EQ(full["probe_set"]["set"], "full");
  EXPECT_EQ(full["probe_set"]["not_probed"], nlohmann::json::array());
  EXPECT_FALSE(full["probe_set"].contains("not_probed_means"));
}

}  // namespace
}  // namespace gpuledger::attribution
