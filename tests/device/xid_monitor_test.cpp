// Xid counting: per GPU (joined to the inventory by PCI bus id) and per the
// workload of the process the driver names; end to end through /dev/kmsg.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "bpf_requirement.h"
#include "device/xid_monitor.h"
#include "exposition_parser.h"
#include "identity/workload_classifier.h"

namespace gpuledger::device {
namespace {

std::vector<GpuInfo> inventory(const std::string& bus) {
  GpuInfo g;
  g.index = 3;
  g.uuid = "GPU-11111111-2222-3333-4444-555555555555";
  g.pci_bus_id = bus;
  g.minor = 3;
  return {g};
}

class FixedNamer : public identity::WorkloadNamer {
 public:
  identity::WorkloadNames names_for(const identity::Workload& w) const override {
    return {"ml", "trainer-0", "main", w.id.empty() ? "" : "research"};
  }
};

TEST(XidMonitor, CountsPerGpuXidAndTheNamedProcessesWorkload) {
  XidMonitorOptions options;
  options.gpu_inventory = [] { return inventory("00000000:07:00.0"); };
  options.workload_of_pid = [](uint32_t pid) -> std::optional<identity::Workload> {
    if (pid != 1234) return std::nullopt;
    return identity::classify_cgroup_path("/kubepods/burstable/pod0f4ab7c1-9c8a-4d3e-8b1a-2c3d4e5f6a7b/" +
                                          std::string(64, 'a'));
  };
  options.namer = std::make_shared<FixedNamer>();
  XidMonitor monitor(options);
  monitor.ingest_record("3,10,100,-;NVRM: Xid (PCI:0000:07:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n");
  monitor.ingest_record("3,11,101,-;NVRM: Xid (PCI:0000:07:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n");
  monitor.ingest_record("3,12,102,-;NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception\n");  // not in inventory
  monitor.ingest_record("11,13,103,-;NVRM: Xid (PCI:0000:07:00): 79, pid=1234, name=x, forged\n");  // user facility
  monitor.ingest_record("6,14,104,-;usb 1-1: new device\n");

  metrics::ExpositionWriter out;
  monitor.write_metrics(out);
  auto samples = testing::parse_exposition(out.text());
  EXPECT_EQ(testing::sample_value(samples, "gpuledger_gpu_xid_errors_total",
                                  {{"gpu", "3"},
                                   {"UUID", "GPU-11111111-2222-3333-4444-555555555555"},
                                   {"pci_bus_id", "00000000:07:00.0"},
                                   {"xid", "79"},
                                   {"workload", "k8s/0f4ab7c1-9c8a-4d3e-8b1a-2c3d4e5f6a7b/" + std::string(64, 'a')},
                                   {"namespace", "ml"},
                                   {"pod", "trainer-0"},
                                   {"container", "main"},
                                   {"team", "research"}}),
            2.0)
      << out.text();
  // No pid, no inventory entry: counted under its bus id with no workload.
  EXPECT_EQ(testing::sample_value(samples, "gpuledger_gpu_xid_errors_total",
                                  {{"gpu", ""}, {"UUID", ""}, {"pci_bus_id", "00000000:3B:00.0"}, {"xid", "13"},
                                   {"workload", ""}, {"team", ""}}),
            1.0);
  EXPECT_EQ(monitor.counts().size(), 2u);
}

TEST(XidMonitor, WithoutAPidAsksForTheWorkloadsOnTheGpu) {
  XidMonitorOptions options;
  options.gpu_inventory = [] { return inventory("00000000:07:00.0"); };
  options.workloads_on_gpu = [](const GpuInfo& gpu) {
    EXPECT_EQ(gpu.index, 3u);
    return std::vector<identity::Workload>{identity::classify_cgroup_path("/system.slice/a.service"),
                                           identity::classify_cgroup_path("/system.slice/b.service")};
  };
  XidMonitor monitor(options);
  monitor.ingest_message("NVRM: Xid (PCI:0000:07:00): 48, An uncorrectable double bit error");
  auto counts = monitor.counts();
  ASSERT_EQ(counts.size(), 2u);
  for (const auto& [labels, n] : counts) EXPECT_EQ(n, 1u);
}

TEST(XidMonitor, WorkloadOfProcessReadsTheV2Line) {
  char dir[] = "/tmp/gl-xid-proc-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  std::string proc = dir;
  std::filesystem::create_directories(proc + "/42");
  std::ofstream(proc + "/42/cgroup") << "12:memory:/x\n0::/system.slice/trainer.service\n";
  auto w = workload_of_process(proc, 42);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->id, "systemd/trainer.service");
  EXPECT_FALSE(workload_of_process(proc, 43));
  std::filesystem::remove_all(proc);
}

// Writing to /dev/kmsg as root injects a real kernel log record (facility
// "user"): the monitor reads it back like any NVRM line.
TEST(XidMonitor, CountsALineWrittenToTheKernelLog) {
  int w = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (w < 0) {
    if (testing::running_in_ci()) FAIL() << "/dev/kmsg not writable under CI: " << std::strerror(errno);
    GTEST_SKIP() << "/dev/kmsg not writable: " << std::strerror(errno);
  }
  // A bus id of our own, so parallel runs do not count each other's lines.
  char bus[32];
  std::snprintf(bus, sizeof(bus), "%04x:e7:00", static_cast<unsigned>(::getpid()) & 0xffff);
  const std::string normalized = normalize_pci_bus_id(std::string(bus) + ".0");

  XidMonitorOptions options;
  options.kernel_records_only = false;  // ours is a user-facility record
  options.gpu_inventory = [&] { return inventory(normalized); };
  XidMonitor monitor(options);
  ASSERT_TRUE(monitor.start());

  char line[256];
  std::snprintf(line, sizeof(line), "<4>NVRM: Xid (PCI:%s): 79, pid=%d, name=xid-test, GPU has fallen off the bus.\n",
                bus, static_cast<int>(::getpid()));
  ASSERT_GT(::write(w, line, std::strlen(line)), 0) << std::strerror(errno);
  ::close(w);

  std::string self_path = "/";
  {
    std::ifstream in("/proc/self/cgroup");
    std::string l;
    while (std::getline(in, l))
      if (l.starts_with("0::")) self_path = l.substr(3);
  }
  const std::string workload = identity::classify_cgroup_path(self_path).id;
  std::optional<double> n;
  for (int i = 0; i < 50 && !n; ++i) {
    metrics::ExpositionWriter out;
    monitor.write_metrics(out);
    n = testing::sample_value(testing::parse_exposition(out.text()), "gpuledger_gpu_xid_errors_total",
                              {{"pci_bus_id", normalized}, {"xid", "79"}, {"gpu", "3"}, {"workload", workload}});
    if (!n) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(n, 1.0);
  metrics::ExpositionWriter out;
  monitor.write_metrics(out);
  EXPECT_NE(out.text().find("gpuledger_xid_source_up{source=\"kmsg\"} 1"), std::string::npos) << out.text();
  monitor.stop();
}

}  // namespace
}  // namespace gpuledger::device
