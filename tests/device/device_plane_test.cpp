#include <gtest/gtest.h>

#include "device/device_plane.h"
#include "exposition_parser.h"
#include "fixture_server.h"
#include "nvml_sim_config.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

using gpuledger::testing::parse_exposition;
using gpuledger::testing::sample_value;

const std::string kA100_0 = "GPU-3f6a2c1e-8b4d-7e21-9c0a-5d1e2f3a4b5c";
const std::string kA100_1 = "GPU-9e8d7c6b-5a49-3827-1605-f4e3d2c1b0a9";

std::string render(const DevicePlane& plane) {
  metrics::ExpositionWriter out;
  plane.write_metrics(out);
  return out.text();
}

TEST(DevicePlane, NoNvidiaSoftwareExportsOnlySelfMetrics) {
  DevicePlaneOptions options;
  options.nvidia_proc_root = "/nonexistent";
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  DevicePlane plane(options);
  plane.poll_nvml();
  auto snap = plane.snapshot();
  EXPECT_FALSE(snap.health.nvml_up);
  EXPECT_NE(snap.health.nvml_error.find("cannot load NVML"), std::string::npos);
  auto samples = parse_exposition(render(plane));
  EXPECT_EQ(sample_value(samples, "gpuledger_nvml_up", {}), 0.0);
  EXPECT_FALSE(sample_value(samples, "gpuledger_dcgm_exporter_up", {}));  // not configured: no series
  for (const auto& s : samples) EXPECT_EQ(s.name.rfind("gpuledger_gpu_", 0), std::string::npos) << s.name;
}

TEST(DevicePlane, JoinsProcfsNvmlAndDcgmIntoOneView) {
  test::TempDir dir;
  test::use_sim_config(dir.write("nvml.json", test::kTwoGpuSimConfig));
  test::FixtureServer exporter;
  exporter.set(test::read_fixture("dcgm-exporter/two-a100-kubernetes.txt"));

  DevicePlaneOptions options;
  options.nvidia_proc_root = test::fixture_path("proc-driver-nvidia");
  options.nvml_library = GPULEDGER_NVML_SIM;
  options.dcgm_exporter_url = exporter.url();
  options.hostname = "node-1";
  DevicePlane plane(options);
  plane.start();
  auto snap = plane.snapshot();
  plane.stop();

  EXPECT_TRUE(snap.health.nvml_up);
  EXPECT_TRUE(snap.health.nvml_simulator);
  EXPECT_TRUE(snap.health.dcgm_up);
  ASSERT_EQ(snap.gpus.size(), 2u);  // one per physical GPU although three sources name them
  EXPECT_EQ(snap.gpus[0].uuid, kA100_0);
  EXPECT_EQ(snap.gpus[0].origins, (std::vector<std::string>{"nvml", "procfs", "dcgm"}));
  EXPECT_EQ(snap.gpus[1].mig_enabled, true);
  ASSERT_TRUE(snap.reading(kA100_0, Source::kDcgm));
  ASSERT_TRUE(snap.reading(kA100_0, Source::kNvml));
  EXPECT_DOUBLE_EQ(*(*snap.reading(kA100_0, Source::kNvml))[DeviceField::kUtilizationRatio], 0.97);
  EXPECT_EQ(snap.processes.size(), 4u);
  EXPECT_EQ(snap.processes.front().gpu_uuid, kA100_0);

  auto samples = parse_exposition(render(plane));
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_info",
                         {{"gpu", "0"}, {"UUID", kA100_0}, {"modelName", "NVIDIA A100-SXM4-80GB"},
                          {"pci_bus_id", "00000000:07:00.0"}, {"minor", "0"}, {"mig_mode", "disabled"}}),
            1.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_info", {{"UUID", kA100_1}, {"mig_mode", "enabled"}}), 1.0);
  // One series per GPU and metric: DCGM's where it has the field (NVML's is not
  // exported beside it, so a plain sum() counts each GPU once).
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_power_watts", {{"UUID", kA100_0}, {"source", "dcgm"}}), 312.614);
  EXPECT_FALSE(sample_value(samples, "gpuledger_gpu_power_watts", {{"UUID", kA100_0}, {"source", "nvml"}}));
  // The energy counter is a Prometheus counter, in joules: DCGM's (mJ in the
  // exporter's page) where it has one, not NVML's beside it.
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_energy_joules_total", {{"UUID", kA100_0}, {"source", "dcgm"}}),
            48213377.902);
  EXPECT_FALSE(sample_value(samples, "gpuledger_gpu_energy_joules_total", {{"UUID", kA100_0}, {"source", "nvml"}}));
  EXPECT_NE(render(plane).find("# TYPE gpuledger_gpu_energy_joules_total counter\n"), std::string::npos);
  // `Hostname` is the node's name, whatever the exporter's pod called itself.
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_utilization_ratio",
                         {{"UUID", kA100_0}, {"source", "dcgm"}, {"Hostname", "node-1"}, {"gpu", "0"}}),
            0.97);
  EXPECT_FALSE(sample_value(samples, "gpuledger_gpu_utilization_ratio", {{"UUID", kA100_0}, {"source", "nvml"}}));
  for (const auto& s : samples)
    if (s.name.rfind("gpuledger_gpu_", 0) == 0 && s.labels.count("Hostname"))
      EXPECT_EQ(s.labels.at("Hostname"), "node-1") << s.name;
  // NVML cannot give utilisation for the MIG GPU: absent, not 0.
  EXPECT_FALSE(sample_value(samples, "gpuledger_gpu_utilization_ratio", {{"UUID", kA100_1}, {"source", "nvml"}}));
  // No exporter series for SM_ACTIVE at all: no family.
  for (const auto& s : samples) EXPECT_NE(s.name, "gpuledger_gpu_sm_active_ratio");
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_process_memory_used_bytes", {{"pid", "4242"}, {"UUID", kA100_0}}),
            40000000000.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_process_sm_utilization_ratio", {{"pid", "4242"}}), 0.55);
  EXPECT_EQ(sample_value(samples, "gpuledger_nvml_up", {}), 1.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_dcgm_exporter_up", {}), 1.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_dcgm_exporter_scrape_errors_total", {}), 0.0);
}

TEST(DevicePlane, NvmlIsTheSourceWhereDcgmIsAbsent) {
  test::TempDir dir;
  test::use_sim_config(dir.write("nvml.json", test::kTwoGpuSimConfig));
  DevicePlaneOptions options;
  options.nvidia_proc_root = "/nonexistent";
  options.nvml_library = GPULEDGER_NVML_SIM;
  options.hostname = "node-2";
  DevicePlane plane(options);
  plane.poll_nvml();
  auto samples = parse_exposition(render(plane));
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_utilization_ratio",
                         {{"UUID", kA100_0}, {"source", "nvml"}, {"Hostname", "node-2"}}),
            0.97);
}

TEST(DevicePlane, ExporterGoingAwayCountsErrorsAndDropsStaleReadings) {
  auto exporter = std::make_unique<test::FixtureServer>();
  exporter->set(test::read_fixture("dcgm-exporter/t4-time-slicing-virtual-gpus.txt"));
  DevicePlaneOptions options;
  options.nvml = false;
  options.nvidia_proc_root = "/nonexistent";
  options.dcgm_exporter_url = exporter->url();
  options.dcgm_stale_after = std::chrono::milliseconds(0);
  options.scrape.timeout = std::chrono::milliseconds(300);
  DevicePlane plane(options);
  plane.poll_dcgm();
  EXPECT_EQ(plane.snapshot().readings.size(), 1u);
  EXPECT_EQ(plane.snapshot().gpus.size(), 1u);  // inventory from exporter labels alone
  exporter.reset();  // unreachable from now on
  plane.poll_dcgm();
  plane.poll_dcgm();
  auto snap = plane.snapshot();
  EXPECT_FALSE(snap.health.dcgm_up);
  EXPECT_EQ(snap.health.dcgm_scrape_errors, 2u);
  EXPECT_TRUE(snap.readings.empty());
  auto samples = parse_exposition(render(plane));
  EXPECT_EQ(sample_value(samples, "gpuledger_dcgm_exporter_up", {}), 0.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_dcgm_exporter_scrape_errors_total", {}), 2.0);
  EXPECT_FALSE(sample_value(samples, "gpuledger_gpu_power_watts", {}));
}

TEST(DevicePlane, MigReadingsCarryInstanceLabels) {
  test::FixtureServer exporter;
  exporter.set(test::read_fixture("dcgm-exporter/mig-a100.txt"));
  DevicePlaneOptions options;
  options.nvml = false;
  options.nvidia_proc_root = "/nonexistent";
  options.dcgm_exporter_url = exporter.url();
  DevicePlane plane(options);
  plane.poll_dcgm();
  auto samples = parse_exposition(render(plane));
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_sm_active_ratio",
                         {{"GPU_I_ID", "9"}, {"GPU_I_PROFILE", "1g.10gb"}, {"source", "dcgm"}}),
            0.125);
  EXPECT_EQ(sample_value(samples, "gpuledger_gpu_info", {{"mig_mode", "enabled"}}), 1.0);
}

}  // namespace
}  // namespace gpuledger::device
