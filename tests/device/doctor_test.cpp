#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "device/doctor.h"
#include "device/capabilities.h"
#include "fixture_server.h"
#include "nvml_sim_config.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

constexpr uint64_t kBpfCaps = (1ull << kCapBpf) | (1ull << kCapPerfmon);

AttributionFacts working_attribution() {
  AttributionFacts f;
  f.btf_present = true;
  f.effective_caps = kBpfCaps;
  f.bpf_load_error = "";
  f.libcuda_found = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1"};
  return f;
}

TEST(Doctor, AttributionOkWhenEverythingIsThere) {
  auto r = judge_attribution(working_attribution());
  EXPECT_EQ(r.status, PlaneStatus::kOk);
  EXPECT_NE(r.reason.find("libcuda.so.1"), std::string::npos);
}

TEST(Doctor, AttributionExplainsEachFailure) {
  auto f = working_attribution();
  f.btf_present = false;
  auto r = judge_attribution(f);
  EXPECT_EQ(r.status, PlaneStatus::kUnavailable);
  EXPECT_NE(r.reason.find("no BTF at /sys/kernel/btf/vmlinux"), std::string::npos) << r.reason;

  f = working_attribution();
  f.effective_caps = 0;
  f.euid = 1000;
  r = judge_attribution(f);
  EXPECT_EQ(r.status, PlaneStatus::kUnavailable);
  EXPECT_NE(r.reason.find("not root"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("CAP_BPF"), std::string::npos) << r.reason;

  f = working_attribution();
  f.effective_caps = 1ull << kCapBpf;  // CAP_BPF alone cannot attach uprobes
  f.euid = 0;
  r = judge_attribution(f);
  EXPECT_EQ(r.status, PlaneStatus::kUnavailable);
  EXPECT_NE(r.reason.find("root but without"), std::string::npos) << r.reason;

  f = working_attribution();
  f.bpf_load_error = "libbpf: failed to load program 'uprobe_cuLaunchKernel': -EPERM";
  r = judge_attribution(f);
  EXPECT_EQ(r.status, PlaneStatus::kUnavailable);
  EXPECT_NE(r.reason.find("BPF program load fails: libbpf"), std::string::npos) << r.reason;

  f = working_attribution();
  f.libcuda_found.clear();
  f.driver_paths_checked = {"/a", "/b"};
  r = judge_attribution(f);
  EXPECT_EQ(r.status, PlaneStatus::kDegraded);
  EXPECT_NE(r.reason.find("no libcuda found"), std::string::npos) << r.reason;
}

TEST(Doctor, PrivilegeRules) {
  EXPECT_TRUE(has_bpf_privilege(1ull << kCapSysAdmin));
  EXPECT_TRUE(has_bpf_privilege(kBpfCaps));
  EXPECT_FALSE(has_bpf_privilege(1ull << kCapPerfmon));
  EXPECT_FALSE(has_bpf_privilege(0));
}

TEST(Doctor, ReadsCapEff) {
  test::TempDir dir;
  auto path = dir.write("status", "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n");
  EXPECT_EQ(read_effective_caps(path), 0x000001ffffffffffull);
  EXPECT_EQ(read_effective_caps(dir.write("bad", "CapEff:\tzz\n")), 0u);
  EXPECT_EQ(read_effective_caps("/nonexistent"), 0u);
}

TEST(Doctor, GatherAttributionUsesTheInjectedLoaderAndPaths) {
  test::TempDir dir;
  DoctorOptions options;
  options.btf_path = dir.write("vmlinux", "btf");
  options.proc_root = dir.path.string();  // a /proc with no processes
  dir.write("self/status", "CapEff:\t0000000000000000\n");
  options.driver_library_paths = std::vector<std::string>{dir.write("libcuda.so.1", "x"), "/nonexistent/libcuda.so.1"};
  bool loader_called = false;
  options.load_bpf = [&] {
    loader_called = true;
    return std::string();
  };
  auto f = gather_attribution(options);
  EXPECT_TRUE(f.btf_present);
  EXPECT_FALSE(loader_called);  // no privilege: no point loading
  EXPECT_FALSE(f.bpf_load_error.has_value());
  ASSERT_EQ(f.libcuda_found.size(), 1u);
  dir.write("self/status", "CapEff:\t000000c000000000\n");  // CAP_PERFMON + CAP_BPF
  f = gather_attribution(options);
  EXPECT_TRUE(loader_called);
  EXPECT_EQ(judge_attribution(f).status, PlaneStatus::kOk);
}

// A tenant's process maps a libcuda under a directory it named with a
// terminal sequence and a bidi override: doctor's table shows the path inert.
TEST(Doctor, HostileLibraryPathIsShownEscaped) {
  test::TempDir dir;
  DoctorOptions options;
  options.btf_path = dir.write("vmlinux", "btf");
  options.proc_root = dir.path.string();
  dir.write("self/status", "CapEff:\t000000c000000000\n");
  dir.write("4242/maps", "7f0000000000-7f0000001000 r-xp 00000000 08:01 1234 /tmp/\x1b[2J\x1b]0;pwned\x07\xE2\x80\xAE/libcuda.so.1\n");
  options.driver_library_paths = std::vector<std::string>{};
  options.load_bpf = [] { return std::string(); };
  const PlaneReport r = judge_attribution(gather_attribution(options));
  ASSERT_EQ(r.status, PlaneStatus::kOk) << r.reason;
  const std::string table = format_doctor_table({r});
  EXPECT_NE(table.find("libcuda: /tmp/\\x1b[2J\\x1b]0;pwned\\x07\\u202e/libcuda.so.1 (pid 4242)"), std::string::npos)
      << table;
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_EQ(table.find('\x07'), std::string::npos);
  EXPECT_EQ(table.find("\xE2\x80\xAE"), std::string::npos);
}

TEST(Doctor, NvmlAbsentOrPresent) {
  auto absent = gather_nvml("/nonexistent/libnvidia-ml.so.1");
  auto r = judge_nvml(absent);
  EXPECT_EQ(r.status, PlaneStatus::kUnavailable);
  EXPECT_NE(r.reason.find("NVML absent"), std::string::npos);

  test::TempDir dir;
  test::use_sim_config(dir.write("nvml.json", test::kTwoGpuSimConfig));
  auto present = gather_nvml(GPULEDGER_NVML_SIM);
  r = judge_nvml(present);
  EXPECT_EQ(r.status, PlaneStatus::kOk) << r.reason;
  EXPECT_NE(r.reason.find("2 GPU(s)"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("simulator"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("550.90.07"), std::string::npos) << r.reason;

  test::use_sim_config(dir.write("empty.json", R"({"devices": []})"));
  EXPECT_EQ(judge_nvml(gather_nvml(GPULEDGER_NVML_SIM)).status, PlaneStatus::kDegraded);

  // Present, but the kernel driver is not loaded: not "absent".
  test::use_sim_config(dir.write("no-driver.json", R"({"init_error": 9, "devices": []})"));
  auto no_driver = gather_nvml(GPULEDGER_NVML_SIM);
  EXPECT_EQ(no_driver.status, NvmlStatus::kDriverNotLoaded);
  r = judge_nvml(no_driver);
  EXPECT_EQ(r.status, PlaneStatus::kDegraded) << r.reason;
  EXPECT_EQ(r.reason.rfind("NVML present, kernel driver not loaded: ", 0), 0u) << r.reason;
  // Another init failure: present, unusable, and why.
  test::use_sim_config(dir.write("no-permission.json", R"({"init_error": 4, "devices": []})"));
  r = judge_nvml(gather_nvml(GPULEDGER_NVML_SIM));
  EXPECT_EQ(r.status, PlaneStatus::kUnavailable) << r.reason;
  EXPECT_EQ(r.reason, std::string("NVML present, nvmlInit_v2 of ") + GPULEDGER_NVML_SIM +
                          " failed: Insufficient Permissions (4)");
}

TEST(Doctor, DcgmExporterChecks) {
  EXPECT_EQ(judge_dcgm(gather_dcgm("")).reason, "not configured (give --dcgm-exporter URL)");
  auto r = judge_dcgm(gather_dcgm("http://127.0.0.1:" + std::to_string(test::closed_port()) + "/metrics"));
  EXPECT_EQ(r.status, PlaneStatus::kUnavailable);
  EXPECT_EQ(r.reason.rfind("unreachable: ", 0), 0u) << r.reason;

  test::FixtureServer server;
  server.set("go_goroutines 12\n");
  EXPECT_EQ(judge_dcgm(gather_dcgm(server.url())).status, PlaneStatus::kDegraded);
  server.set(test::read_fixture("dcgm-exporter/t4-time-slicing-virtual-gpus.txt"));
  r = judge_dcgm(gather_dcgm(server.url()));
  EXPECT_EQ(r.status, PlaneStatus::kDegraded);
  EXPECT_NE(r.reason.find("no DCGM_FI_PROF_"), std::string::npos) << r.reason;
  server.set(test::read_fixture("dcgm-exporter/two-a100-kubernetes.txt"));
  r = judge_dcgm(gather_dcgm(server.url()));
  EXPECT_EQ(r.status, PlaneStatus::kOk) << r.reason;
}

TEST(Doctor, PodResourcesSocket) {
  test::TempDir dir;
  auto missing = gather_pod_resources((dir.path / "kubelet.sock").string());
  EXPECT_EQ(judge_pod_resources(missing).status, PlaneStatus::kUnavailable);
  EXPECT_NE(judge_pod_resources(missing).reason.find("no pod-resources socket"), std::string::npos);
  auto not_socket = gather_pod_resources(dir.write("file.sock", ""));
  EXPECT_NE(judge_pod_resources(not_socket).reason.find("not a socket"), std::string::npos);

  std::string path = (dir.path / "pr.sock").string();
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  auto refusing = gather_pod_resources(path);  // bound, not listening
  EXPECT_EQ(judge_pod_resources(refusing).status, PlaneStatus::kUnavailable);
  EXPECT_NE(judge_pod_resources(refusing).reason.find("cannot connect"), std::string::npos);
  ASSERT_EQ(::listen(fd, 4), 0);
  EXPECT_EQ(judge_pod_resources(gather_pod_resources(path)).status, PlaneStatus::kOk);
  ::close(fd);
}

// Each capability the agent lacks is named with what it costs.
TEST(Doctor, CapabilitiesNameEachMissingOne) {
  auto bit = [](int cap) { return uint64_t{1} << cap; };
  const uint64_t all = bit(39) | bit(38) | bit(19) | bit(2) | bit(34) | bit(40);
  EXPECT_EQ(setpriv_capability_list(), "+bpf,+perfmon,+sys_ptrace,+dac_read_search,+syslog,+checkpoint_restore");
  PlaneReport ok = judge_capabilities(all);
  EXPECT_EQ(ok.status, PlaneStatus::kOk);
  EXPECT_EQ(ok.reason, "all held: CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG CAP_CHECKPOINT_RESTORE");
  PlaneReport no_syslog = judge_capabilities(all & ~bit(34));
  EXPECT_EQ(no_syslog.status, PlaneStatus::kDegraded);
  EXPECT_EQ(no_syslog.reason.rfind("missing CAP_SYSLOG: cannot read /dev/kmsg", 0), 0u) << no_syslog.reason;
  PlaneReport bare = judge_capabilities(0);
  EXPECT_EQ(bare.status, PlaneStatus::kUnavailable);
  for (const char* name :
       {"CAP_BPF:", "CAP_PERFMON:", "CAP_SYS_PTRACE:", "CAP_DAC_READ_SEARCH:", "CAP_SYSLOG:", "CAP_CHECKPOINT_RESTORE:"})
    EXPECT_NE(bare.reason.find(name), std::string::npos) << name << " in " << bare.reason;
  PlaneReport admin = judge_capabilities(bit(21) | bit(19) | bit(2) | bit(34));
  EXPECT_EQ(admin.status, PlaneStatus::kOk) << "CAP_SYS_ADMIN stands in for CAP_BPF, CAP_PERFMON, CAP_CHECKPOINT_RESTORE";
}

TEST(Doctor, TableAndExitCode) {
  std::vector<PlaneReport> reports{{"attribution (eBPF)", PlaneStatus::kDegraded, "no libcuda found"},
                                   {"nvml", PlaneStatus::kUnavailable, "NVML absent: x"}};
  auto table = format_doctor_table(reports);
  EXPECT_NE(table.find("PLANE"), std::string::npos);
  EXPECT_NE(table.find("attribution (eBPF)  DEGRADED     no libcuda found"), std::string::npos) << table;
  EXPECT_NE(table.find("nvml                UNAVAILABLE  NVML absent: x"), std::string::npos) << table;
  EXPECT_EQ(doctor_exit_code(reports), 0);
  reports[0].status = PlaneStatus::kUnavailable;
  EXPECT_EQ(doctor_exit_code(reports), 1);
  reports[0].status = PlaneStatus::kOk;
  EXPECT_EQ(doctor_exit_code(reports), 0);
  EXPECT_EQ(doctor_exit_code({}), 1);
}

}  // namespace
}  // namespace gpuledger::device
