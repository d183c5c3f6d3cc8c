// The ledger's /metrics families alone (ledger_metrics.h): what one window
// adds, what the store's totals start from, and retirement.
#include "ledger/ledger_metrics.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gpuledger::ledger {
namespace {

const AccountLabels kA{"ns", "pod-a", "main", "team-a"};
const std::string kSeriesA = R"(namespace="ns",pod="pod-a",container="main",team="team-a",UUID="GPU-1")";
const std::string kSeriesIdle = R"(namespace="",pod="",container="",team="__idle__",UUID="GPU-1")";

// One 60 s window of GPU-1 costing 1'000'000 micro-units: pod-a busy 600'000 and
// idle 100'000, __idle__ 300'000; pod-a held all of it, 30 s busy, sm_active 0.5.
WindowRecord window(int64_t start) {
  WindowRecord w;
  w.start = start;
  w.end = start + 60;
  w.slot = {"GPU-1", "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  w.cost_micros = 1'000'000;
  w.busy_fraction = 0.5;
  w.split_source = "spans";
  w.device_quality.ok = 1;
  w.charges = {{"k8s/pod-a", ChargeKind::kBusy, 600'000}, {"k8s/pod-a", ChargeKind::kIdle, 100'000},
               {"__idle__", ChargeKind::kIdle, 300'000}};
  AccountRecord a;
  a.account = "k8s/pod-a";
  a.labels = kA;
  a.held_share = 1;
  a.allocated_share = 1;
  a.gpu_busy_seconds = 30;
  a.vram_byte_seconds = 120;
  a.launches = 7;
  a.efficiency.sm_active = 0.5;
  AccountRecord idle;
  idle.account = "__idle__";
  w.accounts = {a, idle};
  return w;
}

std::string page(const LedgerMetrics& m) {
  metrics::ExpositionWriter out;
  m.write(out);
  return out.text();
}

// The sample lines of the page that start with `family` followed by '{' or ' '.
std::vector<std::string> samples(const std::string& text, const std::string& family) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0) out.push_back(line);
  return out;
}

TEST(LedgerMetrics, AWindowAddsItsChargesSecondsAndCounts) {
  LedgerMetrics m("EUR");
  m.add_window(window(600));
  const std::string t = page(m);
  EXPECT_EQ(samples(t, "gpuledger_cost_total"),
            (std::vector<std::string>{"gpuledger_cost_total{" + kSeriesIdle + ",kind=\"idle\"} 0.3",
                                      "gpuledger_cost_total{" + kSeriesA + ",kind=\"busy\"} 0.6",
                                      "gpuledger_cost_total{" + kSeriesA + ",kind=\"idle\"} 0.1"}));
  EXPECT_EQ(samples(t, "gpuledger_gpu_busy_seconds_total"),
            std::vector<std::string>{"gpuledger_gpu_busy_seconds_total{UUID=\"GPU-1\"} 30"});
  EXPECT_EQ(samples(t, "gpuledger_gpu_share_ratio"),
            (std::vector<std::string>{"gpuledger_gpu_share_ratio{" + kSeriesIdle + "} 0.3",
                                      "gpuledger_gpu_share_ratio{" + kSeriesA + "} 0.7"}));
  EXPECT_EQ(samples(t, "gpuledger_held_gpu_seconds_total"),
            (std::vector<std::string>{"gpuledger_held_gpu_seconds_total{" + kSeriesIdle + "} 0",
                                      "gpuledger_held_gpu_seconds_total{" + kSeriesA + "} 60"}));
  EXPECT_EQ(samples(t, "gpuledger_ledger_launches_total")[1], "gpuledger_ledger_launches_total{" + kSeriesA + "} 7");
  EXPECT_EQ(samples(t, "gpuledger_ledger_vram_byte_seconds_total")[1],
            "gpuledger_ledger_vram_byte_seconds_total{" + kSeriesA + "} 120");
  EXPECT_EQ(samples(t, "gpuledger_ledger_efficiency_weighted_gpu_seconds_total"),
            (std::vector<std::string>{
                "gpuledger_ledger_efficiency_weighted_gpu_seconds_total{" + kSeriesA + ",ratio=\"sm_active\"} 30",
                "gpuledger_ledger_efficiency_weighted_gpu_seconds_total{" + kSeriesA + ",ratio=\"sm_occupancy\"} 0",
                "gpuledger_ledger_efficiency_weighted_gpu_seconds_total{" + kSeriesA + ",ratio=\"tensor_active\"} 0",
                "gpuledger_ledger_efficiency_weighted_gpu_seconds_total{" + kSeriesA + ",ratio=\"dram_active\"} 0"}));
  EXPECT_EQ(samples(t, "gpuledger_ledger_split_windows_total"),
            std::vector<std::string>{"gpuledger_ledger_split_windows_total{UUID=\"GPU-1\",split_source=\"spans\"} 1"});
  EXPECT_EQ(samples(t, "gpuledger_device_data_windows_total"),
            std::vector<std::string>{"gpuledger_device_data_windows_total{UUID=\"GPU-1\",quality=\"ok\"} 1"});
  EXPECT_EQ(samples(t, "gpuledger_ledger_info"), std::vector<std::string>{"gpuledger_ledger_info{currency=\"EUR\"} 1"});
  EXPECT_EQ(samples(t, "gpuledger_ledger_first_window_timestamp_seconds"),
            std::vector<std::string>{"gpuledger_ledger_first_window_timestamp_seconds 600"});
  EXPECT_EQ(samples(t, "gpuledger_ledger_windows_total"), std::vector<std::string>{"gpuledger_ledger_windows_total 1"});
  EXPECT_EQ(m.windows_written(), 1u);
}

TEST(LedgerMetrics, TheFamiliesComeInTheirFixedOrder) {
  LedgerMetrics m("USD");
  std::vector<std::string> types;
  std::istringstream in(page(m));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("# TYPE ", 0) == 0) types.push_back(line.substr(7));
  EXPECT_EQ(types, (std::vector<std::string>{
                       "gpuledger_cost_total counter",
                       "gpuledger_workload_gpu_energy_joules_total counter",
                       "gpuledger_gpu_busy_seconds_total counter",
                       "gpuledger_gpu_share_ratio gauge",
                       "gpuledger_gpu_allocated_share_ratio gauge",
                       "gpuledger_gpu_used_share_ratio gauge",
                       "gpuledger_held_gpu_seconds_total counter",
                       "gpuledger_busy_gpu_seconds_total counter",
                       "gpuledger_ledger_vram_byte_seconds_total counter",
                       "gpuledger_ledger_launches_total counter",
                       "gpuledger_ledger_efficiency_weighted_gpu_seconds_total counter",
                       "gpuledger_ledger_efficiency_known_gpu_seconds_total counter",
                       "gpuledger_ledger_share_gpu_seconds_total counter",
                       "gpuledger_ledger_allocated_share_gpu_seconds_total counter",
                       "gpuledger_ledger_allocated_share_unknown_gpu_seconds_total counter",
                       "gpuledger_ledger_used_share_gpu_seconds_total counter",
                       "gpuledger_ledger_energy_share_gpu_seconds_total counter",
                       "gpuledger_ledger_carbon_grams_total counter",
                       "gpuledger_ledger_split_windows_total counter",
                       "gpuledger_ledger_split_disagreements_total counter",
                       "gpuledger_nvml_unattributed_sm_seconds_total counter",
                       "gpuledger_device_data_suspect_windows_total counter",
                       "gpuledger_device_data_windows_total counter",
                       "gpuledger_gpu_used_unallocated_seconds_total counter",
                       "gpuledger_gpu_allocated_unused_seconds_total counter",
                       "gpuledger_ledger_info gauge",
                       "gpuledger_ledger_first_window_timestamp_seconds gauge",
                       "gpuledger_ledger_windows_total counter",
                   }));
}

// The store's sums are where the counters start; a stored window counts its
// split and checks but is not a window this agent wrote.
TEST(LedgerMetrics, TheCountersContinueFromTheStore) {
  LedgerMetrics m("USD");
  LedgerTotals totals;
  totals.cost.push_back({"k8s/pod-a", kA, "GPU-1", ChargeKind::kBusy, 2'500'000});
  totals.gpu_busy_seconds.push_back({"GPU-1", 90});
  m.load(totals, 120);
  m.add_stored(window(120));
  m.add_window(window(600));
  const std::string t = page(m);
  EXPECT_EQ(samples(t, "gpuledger_cost_total")[1], "gpuledger_cost_total{" + kSeriesA + ",kind=\"busy\"} 3.1");
  EXPECT_EQ(samples(t, "gpuledger_gpu_busy_seconds_total"),
            std::vector<std::string>{"gpuledger_gpu_busy_seconds_total{UUID=\"GPU-1\"} 120"});
  EXPECT_EQ(samples(t, "gpuledger_ledger_split_windows_total"),
            std::vector<std::string>{"gpuledger_ledger_split_windows_total{UUID=\"GPU-1\",split_source=\"spans\"} 2"});
  EXPECT_EQ(samples(t, "gpuledger_ledger_first_window_timestamp_seconds"),
            std::vector<std::string>{"gpuledger_ledger_first_window_timestamp_seconds 120"});
  EXPECT_EQ(samples(t, "gpuledger_ledger_windows_total"), std::vector<std::string>{"gpuledger_ledger_windows_total 1"});
}

// The series of an account unseen for retire_after leave; the store's count as
// seen at the first call; the special accounts never retire.
TEST(LedgerMetrics, AnAccountUnseenForRetireAfterLeaves) {
  LedgerMetrics m("USD");
  LedgerTotals totals;
  totals.cost.push_back({"k8s/pod-a", kA, "GPU-1", ChargeKind::kBusy, 1'000'000});
  m.load(totals, 0);
  m.retire_after(100);
  m.seen({}, 1000);
  m.seen({}, 1099);
  EXPECT_EQ(samples(page(m), "gpuledger_cost_total").size(), 1u);
  m.seen({}, 1100);
  EXPECT_EQ(samples(page(m), "gpuledger_cost_total").size(), 0u);
  m.add_window(window(1140));  // pod-a charged again: seen at the window's end, 1200, from 0
  m.seen({kA}, 1250);
  m.seen({}, 1349);
  EXPECT_EQ(samples(page(m), "gpuledger_cost_total")[1], "gpuledger_cost_total{" + kSeriesA + ",kind=\"busy\"} 0.6");
  m.seen({}, 1350);
  EXPECT_EQ(samples(page(m), "gpuledger_cost_total"),
            std::vector<std::string>{"gpuledger_cost_total{" + kSeriesIdle + ",kind=\"idle\"} 0.3"});
}

}  // namespace
}  // namespace gpuledger::ledger
