// Issue 33, end to end through the real readers and the ledger: a stand-in
// dcgm-exporter with a real one's noise (simulation/dcgm_stand_in.h), its
// pages parsed and read as the agent reads them (device/dcgm_readings.h,
// node/observation_inputs.h), an Accountant writing a store, and the report,
// rightsizing and /metrics made from it.
//   GPU-dead  DCGM's profiling fields read 0 while its own GPU_UTIL says ~90 %
//             and the probes' spans cover 80 % of each window: every window
//             suspect, no 0 % billed or advised.
//   GPU-busy, GPU-idle  noisy but healthy: not one window suspect.
// And allocation against use from the device side: pod-busy's processes also
// sit on GPU-idle (not allocated to it); pod-idle holds GPU-idle and runs
// nothing on it; pod-dead's processes the device side misses, but the probes
// see it work: no allocation without use is counted for it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

#include "../ledger/ledger_dir_test.h"
#include "device/dcgm_readings.h"
#include "device/prometheus_parser.h"
#include "ledger/accountant.h"
#include "ledger/device_quality.h"
#include "ledger/store.h"
#include "metrics/prometheus_text.h"
#include "node/observation_inputs.h"
#include "report/report.h"
#include "report/rightsizing.h"
#include "simulation/dcgm_stand_in.h"

namespace gpuledger::node {
namespace {

constexpr int64_t kT0 = 1'800'000'000;
constexpr int kSeconds = 7200;  // two hours: 120 windows of 60 s per GPU

const char* kPrices = R"(currency: USD
per_model:
  "H100": 3.60
window_seconds: 60
idle_policy: holders
)";

ledger::AccountLabels pod(const std::string& name) { return {"ml", name, "main", "t"}; }

class DeviceDataChecks : public testing::LedgerDirTest {
 protected:
  DeviceDataChecks() : LedgerDirTest("gl_device_checks_") {}

  void run() {
    simulation::DcgmStandIn dcgm({
        {"GPU-dead", 0, "NVIDIA H100 80GB HBM3", 0.9, 0.7, 0.4, 0.2, 0.3, /*dead_profiling=*/true},
        {"GPU-busy", 1, "NVIDIA H100 80GB HBM3", 0.9, 0.7, 0.4, 0.2, 0.3},
        {"GPU-idle", 2, "NVIDIA H100 80GB HBM3", 0.03, 0.02, 0.01, 0.0, 0.01},
    });
    std::mt19937 rng(5);
    std::normal_distribution<double> noise(0, 1);
    ledger::Store store(db());
    ledger::Accountant acc(store, ledger::parse_prices(kPrices));
    for (int t = 0; t <= kSeconds; t += 10) {
      const double now = static_cast<double>(kT0 + t);
      // The agent's reading of the exporter's page.
      const auto tp = std::chrono::system_clock::time_point(std::chrono::seconds(kT0 + t));
      device::DcgmExtraction x = device::extract_dcgm_readings(device::parse_prometheus_text(dcgm.page(now)), tp);
      device::DeviceSnapshot devices;
      devices.gpus = x.gpus;
      devices.readings = x.readings;
      devices.health.nvml_up = true;
      for (const auto& [uuid, level] : {std::pair{"GPU-busy", 0.9}, {"GPU-dead", 0.9}, {"GPU-idle", 0.03}}) {
        device::DeviceReading nvml;
        nvml.source = device::Source::kNvml;
        nvml.uuid = uuid;
        nvml[device::DeviceField::kUtilizationRatio] = std::clamp(std::round(level * 100 + 5 * noise(rng)), 0.0, 100.0) / 100;
        nvml[device::DeviceField::kPowerWatts] = 65 + 550 * level + 6 * noise(rng);
        devices.readings.push_back(nvml);
      }
      ledger::Observation o;
      o.time = now;
      for (const char* uuid : {"GPU-busy", "GPU-dead", "GPU-idle"}) o.slots.push_back({uuid, "NVIDIA H100 80GB HBM3", std::nullopt, ""});
      o.holders = {{"GPU-dead", "k8s/pod-dead", pod("pod-dead"), 1},
                   {"GPU-busy", "k8s/pod-busy", pod("pod-busy"), 1},
                   {"GPU-idle", "k8s/pod-idle", pod("pod-idle"), 1}};
      o.workloads = {
          {"k8s/pod-dead", pod("pod-dead"), 0.8 * t, static_cast<uint64_t>(50 * t), 8ull << 30, {"GPU-dead"}, {}, {}},
          {"k8s/pod-busy", pod("pod-busy"), 0.8 * t, static_cast<uint64_t>(50 * t), 8ull << 30, {"GPU-busy"}, {}, {}},
      };
      o.device = device_samples(devices);
      // The device side: pod-busy's processes on its GPU and on GPU-idle; pod-idle nowhere; pod-dead's
      // missed (a pid it could not map), while the probes see it work: not "allocated, unused".
      o.device_use = {{"k8s/pod-busy", {pod("pod-busy"), {"GPU-busy", "GPU-idle"}}}};
      o.device_use_known = true;
      acc.observe(o);
    }
    metrics::ExpositionWriter out;
    acc.write_metrics(out);
    metrics_ = out.text();
  }
  std::string metrics_;
};

TEST_F(DeviceDataChecks, DeadProfilingIsSuspectEveryWindowAndNeverBilledAsZero) {
  run();
  ledger::Store store(db(), ledger::Store::Mode::kReadOnly);
  std::map<std::string, ledger::WindowRecord::DeviceQualityCounts> by_gpu;
  for (const auto& w : store.windows(kT0, kT0 + kSeconds)) {
    auto& q = by_gpu[w.slot.uuid];
    q.ok += w.device_quality.ok;
    q.suspect += w.device_quality.suspect;
    q.absent += w.device_quality.absent;
    if (w.slot.uuid == "GPU-dead") {
      // Suspect values are not stored as values: unknown, never 0.
      EXPECT_EQ(w.device, ledger::Efficiency{});
      for (const auto& a : w.accounts) EXPECT_EQ(a.efficiency, ledger::Efficiency{}) << a.account;
      EXPECT_EQ(w.device_findings, (std::map<std::string, int64_t>{{"dram_active:zero_while_busy", 1},
                                                                 {"gr_engine_active:zero_while_busy", 1},
                                                                 {"sm_active:zero_while_busy", 1},
                                                                 {"sm_occupancy:zero_while_busy", 1},
                                                                 {"tensor_active:zero_while_busy", 1}}));
      EXPECT_EQ(w.busy_source, "device");  // its utilisation is not suspect: the bill's busy part stands
    } else {
      EXPECT_TRUE(w.device_findings.empty()) << w.slot.uuid << " " << w.start;
      EXPECT_TRUE(w.device.sm_active) << w.slot.uuid;
    }
  }
  using Q = ledger::WindowRecord::DeviceQualityCounts;
  EXPECT_EQ(by_gpu["GPU-dead"], (Q{0, 120, 0}));
  EXPECT_EQ(by_gpu["GPU-busy"], (Q{120, 0, 0}));  // the false-positive case: noisy, healthy
  EXPECT_EQ(by_gpu["GPU-idle"], (Q{120, 0, 0}));

  // What `gpuledger doctor --store` says.
  const ledger::DeviceQualitySummary doctor = ledger::device_quality_summary(store, kT0, kT0 + kSeconds);
  EXPECT_EQ(doctor.suspect, 120);
  EXPECT_EQ(doctor.ok, 240);
  EXPECT_NE(doctor.line().find("120 of 360 windows in the last day had suspect device data (240 ok, 0 absent); "
                               "GPU-dead: dram_active: zero_while_busy, gr_engine_active: zero_while_busy, "
                               "sm_active: zero_while_busy, sm_occupancy: zero_while_busy, tensor_active: zero_while_busy"),
            std::string::npos)
      << doctor.line();

  // The self-metric, per field and reason.
  EXPECT_NE(metrics_.find("gpuledger_device_data_suspect_windows_total{UUID=\"GPU-dead\",field=\"sm_active\","
                          "reason=\"zero_while_busy\"} 120\n"),
            std::string::npos)
      << metrics_;
  EXPECT_EQ(metrics_.find("gpuledger_device_data_suspect_windows_total{UUID=\"GPU-busy\""), std::string::npos);
  EXPECT_NE(metrics_.find("gpuledger_device_data_windows_total{UUID=\"GPU-busy\",quality=\"ok\"} 120\n"),
            std::string::npos);

  // The report: counted, flagged per row, "suspect" where a 0 % would have been.
  const report::Report r = report::build_report(store, kT0, kT0 + kSeconds, report::GroupBy::kPod);
  const auto j = nlohmann::json::parse(report::render_json(r));
  EXPECT_EQ(j["coverage"]["windows_by_device_quality"],
            (nlohmann::json{{"ok", 240}, {"suspect", 120}, {"absent", 0}}));
  bool seen_dead = false;
  for (const auto& row : j["rows"]) {
    if (row["key"] == "ml/pod-dead") {
      seen_dead = true;
      EXPECT_EQ(row["device_data"], "suspect");
      EXPECT_EQ(row["device_suspect_windows"], 120);
      EXPECT_TRUE(row["sm_active"].is_null());
      EXPECT_TRUE(row["sm_active_of_held"].is_null());
    } else if (row["key"] == "ml/pod-busy") {
      EXPECT_EQ(row["device_data"], "ok");
      EXPECT_GT(row["sm_active"].get<double>(), 0.6);
    }
  }
  EXPECT_TRUE(seen_dead);
  const std::string table = report::render_table(r, true);
  EXPECT_NE(table.find("suspect"), std::string::npos);
  EXPECT_NE(table.find("Device data suspect in 120 of 360 windows (GPU-dead;"), std::string::npos) << table;
  const std::string csv = report::render_csv(r);
  EXPECT_NE(csv.find(",device_data,device_suspect_windows,device_suspect_reasons"), std::string::npos);
  EXPECT_NE(report::render_html(r).find(">suspect</td>"), std::string::npos);

  // Rightsizing: no advice stands on the dead counters.
  report::RightsizingOptions options;
  options.min_evidence_seconds = 0;
  const report::Rightsizing rs = report::rightsize(store, kT0, kT0 + kSeconds, report::GroupBy::kPod, options);
  bool advised = false;
  for (const auto& rec : rs.rows) {
    if (rec.key != "ml/pod-dead") continue;
    advised = true;
    EXPECT_NE(rec.evidence.sm_source, "device");
    EXPECT_EQ(rec.evidence.device_suspect_windows, 120);
    EXPECT_NE(rec.why.find("device data suspect in 120 of its windows"), std::string::npos) << rec.why;
    EXPECT_FALSE(rec.evidence.sm_active_p95 && *rec.evidence.sm_active_p95 == 0.0);
  }
  EXPECT_TRUE(advised);
}

TEST_F(DeviceDataChecks, UseOutsideAllocationAndAllocationWithoutUseAreCounted) {
  run();
  ledger::Store store(db(), ledger::Store::Mode::kReadOnly);
  double used = 0, unused = 0, dead_unused = 0;
  for (const auto& w : store.windows(kT0, kT0 + kSeconds))
    for (const auto& a : w.accounts) {
      if (a.account == "k8s/pod-busy" && w.slot.uuid == "GPU-idle") used += a.used_unallocated_seconds.value_or(-1e9);
      if (a.account == "k8s/pod-idle" && w.slot.uuid == "GPU-idle") unused += a.allocated_unused_seconds.value_or(-1e9);
      if (a.account == "k8s/pod-dead") dead_unused += a.allocated_unused_seconds.value_or(0) + a.used_unallocated_seconds.value_or(0);
    }
  EXPECT_DOUBLE_EQ(used, kSeconds);
  EXPECT_DOUBLE_EQ(unused, kSeconds);
  EXPECT_DOUBLE_EQ(dead_unused, 0);
  EXPECT_NE(metrics_.find("gpuledger_gpu_used_unallocated_seconds_total{namespace=\"ml\",pod=\"pod-busy\","
                          "container=\"main\",team=\"t\",UUID=\"GPU-idle\"} 7200\n"),
            std::string::npos)
      << metrics_;
  EXPECT_NE(metrics_.find("gpuledger_gpu_allocated_unused_seconds_total{namespace=\"ml\",pod=\"pod-idle\","
                          "container=\"main\",team=\"t\",UUID=\"GPU-idle\"} 7200\n"),
            std::string::npos);
  const report::Report r = report::build_report(store, kT0, kT0 + kSeconds, report::GroupBy::kPod);
  const auto j = nlohmann::json::parse(report::render_json(r));
  ASSERT_TRUE(j.contains("allocation_against_use"));
  const auto& use = j["allocation_against_use"];
  ASSERT_EQ(use.size(), 2u) << use;
  EXPECT_EQ(use[0]["key"], "ml/pod-busy");
  EXPECT_NEAR(use[0]["used_unallocated_gpu_hours"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(use[0]["allocated_unused_gpu_hours"].get<double>(), 0.0);
  EXPECT_EQ(use[1]["key"], "ml/pod-idle");
  EXPECT_EQ(use[1]["used_unallocated_gpu_hours"].get<double>(), 0.0);
  EXPECT_NEAR(use[1]["allocated_unused_gpu_hours"].get<double>(), 2.0, 1e-9);
  EXPECT_NE(report::render_table(r, false).find("Allocation against use"), std::string::npos);
  EXPECT_NE(report::render_csv(r).find(",used_unallocated_gpu_hours,allocated_unused_gpu_hours\r\n"), std::string::npos);
  EXPECT_NE(report::render_html(r).find("id=\"allocation-use\""), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::node
