// The NVIDIA ioctl plane end to end: the real BPF program on sys_enter /
// sys_exit, aimed (through its configurable device filter) at a character
// device node the test makes with mknod, and a child in a fresh cgroup v2
// issuing a known number of ioctls with known request numbers.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "bpf_requirement.h"
#include "device/ioctl_plane.h"
#include "exposition_parser.h"
#include "identity/cgroup_fs.h"
#include "identity/workload_classifier.h"
#include "probes/pin_store.h"
#include "simulation/tenant.h"

namespace gpuledger::device {
namespace {
namespace fs = std::filesystem;

// /dev/null's numbers: ioctl on it fails with ENOTTY, but it is still a call.
constexpr uint32_t kMajor = 1, kMinor = 3;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gl-ioctl-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A device node with /dev/null's numbers in `tmp`, traced as if it were
// nvidia.ko's; "" when it cannot be made.
std::string fake_nvidia_node(const TempDir& tmp) {
  const std::string node = (tmp.path / "fake-nvidia").string();
  if (::mknod(node.c_str(), S_IFCHR | 0600, makedev(kMajor, kMinor)) == 0) return node;
  ADD_FAILURE() << "mknod " << node << ": " << std::strerror(errno);
  return "";
}

// Forks a child that joins `cgroup_dir`, then makes the calls; returns its exit status.
int run_in_cgroup(const std::string& cgroup_dir, const std::string& node) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int cg = ::open((cgroup_dir + "/cgroup.procs").c_str(), O_WRONLY);
    if (cg < 0 || ::write(cg, "0", 1) != 1) _exit(10);
    ::close(cg);
    int fd = ::open(node.c_str(), O_RDWR);
    if (fd < 0) _exit(11);
    char payload[32] = {};
    for (int i = 0; i < 5; ++i) ::ioctl(fd, _IOWR('F', 0x2A, char[32]), payload);  // NV_ESC_RM_CONTROL
    for (int i = 0; i < 3; ++i) ::ioctl(fd, _IOWR('F', 200 + 10, char[32]), payload);  // NV_ESC_CHECK_VERSION_STR
    for (int i = 0; i < 2; ++i) ::ioctl(fd, _IOWR('F', 0x77, char[8]), payload);  // not in the tables
    // Another device: not traced.
    int pipefd[2];
    if (::pipe(pipefd) != 0) _exit(12);
    int n = 0;
    for (int i = 0; i < 4; ++i) ::ioctl(pipefd[0], FIONREAD, &n);
    _exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(IoctlPlane, CountsCallsPerWorkloadDeviceAndEscape) {
  GL_REQUIRE_BPF();
  const auto mounts = identity::discover_cgroup_mounts();
  if (mounts.v2.empty()) GTEST_SKIP() << "no cgroup v2 mount";

  TempDir tmp;
  const std::string node = fake_nvidia_node(tmp);
  ASSERT_FALSE(node.empty());

  IoctlPlaneOptions options;
  options.devices = {{kMajor, kMinor, IoctlDeviceKind::kNvidia}};  // name its escapes as nvidia.ko's
  IoctlPlane plane(options);
  ASSERT_TRUE(plane.up()) << plane.error();

  simulation::ScopedCgroup cg(mounts.v2, "/gpuledger-test-ioctl-" + std::to_string(::getpid()) + "/tenant.service");
  auto cgroup_id = identity::cgroup_id_of(cg.dir());
  ASSERT_TRUE(cgroup_id);
  ASSERT_EQ(run_in_cgroup(cg.dir(), node), 0);

  std::map<uint32_t, IoctlTotals> mine;
  for (const auto& [key, t] : plane.refresh()) {
    if (key.cgroup_id != *cgroup_id) continue;
    EXPECT_EQ(key.major, kMajor);
    EXPECT_EQ(key.minor, kMinor);
    mine[key.escape] = t;
  }
  ASSERT_EQ(mine.size(), 3u) << "only the traced device's calls count";
  EXPECT_EQ(mine[0x2A].calls, 5u);
  EXPECT_EQ(mine[210].calls, 3u);
  EXPECT_EQ(mine[0x77].calls, 2u);
  for (const auto& [escape, t] : mine) EXPECT_GT(t.ns, 0u) << escape;
  for (const auto& [reason, n] : plane.dropped()) EXPECT_EQ(n, 0u) << reason;

  metrics::ExpositionWriter out;
  plane.write_metrics(out);
  auto samples = testing::parse_exposition(out.text());
  const std::string workload = identity::classify_cgroup_path(cg.path()).id;
  auto calls = [&](const std::string& escape) {
    return testing::sample_value(samples, "gpuledger_nvidia_ioctls_total",
                                 {{"workload", workload}, {"device", "nvidia3"}, {"minor", "3"}, {"escape", escape}});
  };
  EXPECT_EQ(calls("NV_ESC_RM_CONTROL"), 5.0) << out.text();
  EXPECT_EQ(calls("NV_ESC_CHECK_VERSION_STR"), 3.0);
  EXPECT_EQ(calls("0x77"), 2.0);
  auto seconds = testing::sample_value(samples, "gpuledger_nvidia_ioctl_seconds_total",
                                       {{"workload", workload}, {"escape", "NV_ESC_RM_CONTROL"}});
  ASSERT_TRUE(seconds);
  EXPECT_GT(*seconds, 0.0);
  EXPECT_EQ(testing::sample_value(samples, "gpuledger_nvidia_ioctl_plane_up", {}), 1.0);

  // Totals are cumulative across readings.
  ASSERT_EQ(run_in_cgroup(cg.dir(), node), 0);
  uint64_t control = 0;
  for (const auto& [key, t] : plane.refresh())
    if (key.cgroup_id == *cgroup_id && key.escape == 0x2A) control = t.calls;
  EXPECT_EQ(control, 10u);

  std::error_code ec;
  fs::remove(mounts.v2 + "/gpuledger-test-ioctl-" + std::to_string(::getpid()), ec);
}

// Issue 10: pinned, the ioctl counters outlive the plane (the agent's
// restart) and count the calls made while no plane runs.
TEST(IoctlPlane, PinnedCountersSurviveARestartAndCountCallsMadeMeanwhile) {
  GL_REQUIRE_BPF();
  const std::string pins = probes::find_or_mount_bpffs() + "/gl-test-ioctl-" + std::to_string(::getpid());
  probes::remove_pin_tree(pins);
  const auto mounts = identity::discover_cgroup_mounts();
  if (mounts.v2.empty()) GTEST_SKIP() << "no cgroup v2 mount";
  TempDir tmp;
  const std::string node = fake_nvidia_node(tmp);
  ASSERT_FALSE(node.empty());
  simulation::ScopedCgroup cg(mounts.v2, "/gpuledger-test-ioctl-pins-" + std::to_string(::getpid()) + "/t.service");
  auto cgroup_id = identity::cgroup_id_of(cg.dir());
  ASSERT_TRUE(cgroup_id);
  auto control_calls = [&](const IoctlPlane& plane) {
    for (const auto& [key, t] : plane.refresh())
      if (key.cgroup_id == *cgroup_id && key.escape == 0x2A) return t.calls;
    return uint64_t{0};
  };
  IoctlPlaneOptions options;
  options.devices = {{kMajor, kMinor, IoctlDeviceKind::kNvidia}};
  options.bpf_pin_dir = pins;
  {
    IoctlPlane plane(options);
    ASSERT_TRUE(plane.up()) << plane.error();
    EXPECT_FALSE(plane.pins_adopted());
    ASSERT_EQ(run_in_cgroup(cg.dir(), node), 0);
    EXPECT_EQ(control_calls(plane), 5u);
  }
  ASSERT_EQ(run_in_cgroup(cg.dir(), node), 0);  // no plane runs: the pinned tracepoints count
  {
    // Another device set this time: the pinned filter follows it.
    options.devices = {{kMajor, kMinor, IoctlDeviceKind::kNvidia}, {kMajor, 5, IoctlDeviceKind::kOther}};
    IoctlPlane plane(options);
    ASSERT_TRUE(plane.up()) << plane.error();
    EXPECT_TRUE(plane.pins_adopted());
    EXPECT_EQ(control_calls(plane), 10u);
    ASSERT_EQ(run_in_cgroup(cg.dir(), node), 0);
    EXPECT_EQ(control_calls(plane), 15u) << "each call counted once";
  }
  EXPECT_GT(probes::remove_pin_tree(pins), 0u);
  std::error_code ec;
  fs::remove(mounts.v2 + "/gpuledger-test-ioctl-pins-" + std::to_string(::getpid()), ec);
}

TEST(IoctlPlane, RetiresEntriesOfGoneCgroupsAndKeepsTheirTotals) {
  GL_REQUIRE_BPF();
  const auto mounts = identity::discover_cgroup_mounts();
  if (mounts.v2.empty()) GTEST_SKIP() << "no cgroup v2 mount";
  TempDir tmp;
  const std::string node = fake_nvidia_node(tmp);
  ASSERT_FALSE(node.empty());
  IoctlPlaneOptions options;
  options.devices = {{kMajor, kMinor, IoctlDeviceKind::kNvidia}};
  options.gc_interval = std::chrono::milliseconds(0);  // sweep at every reading
  IoctlPlane plane(options);
  ASSERT_TRUE(plane.up()) << plane.error();

  const std::string top = "/gpuledger-test-ioctl-gc-" + std::to_string(::getpid());
  uint64_t id = 0;
  {
    simulation::ScopedCgroup cg(mounts.v2, top + "/short-lived.service");
    id = identity::cgroup_id_of(cg.dir()).value_or(0);
    ASSERT_NE(id, 0u);
    ASSERT_EQ(run_in_cgroup(cg.dir(), node), 0);
    uint64_t calls = 0;
    for (const auto& [key, t] : plane.refresh())
      if (key.cgroup_id == id) calls += t.calls;
    EXPECT_EQ(calls, 10u);
    EXPECT_EQ(plane.kernel_entries(id), 3u);  // live: kept in the kernel map
  }  // the cgroup is removed
  auto entries_of = [&] {
    size_t n = 0;
    for (const auto& [key, t] : plane.refresh())
      if (key.cgroup_id == id) n += t.calls;
    return n;
  };
  EXPECT_EQ(entries_of(), 10u);  // the sweep deletes its kernel entries after this reading...
  EXPECT_EQ(entries_of(), 10u);  // ...and the totals stay
  EXPECT_EQ(plane.kernel_entries(id), 0u);
  std::error_code ec;
  fs::remove(mounts.v2 + top, ec);
}

TEST(IoctlPlane, UvmDevicesKeepTheWholeRequestNumber) {
  GL_REQUIRE_BPF();
  TempDir tmp;
  const std::string node = (tmp.path / "fake-uvm").string();
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0600, makedev(kMajor, kMinor)), 0) << std::strerror(errno);
  IoctlPlaneOptions options;
  options.devices = {{kMajor, std::nullopt, IoctlDeviceKind::kUvm}};  // every minor of the major
  IoctlPlane plane(options);
  ASSERT_TRUE(plane.up()) << plane.error();

  const uint64_t self_cgroup = [] {
    auto mounts = identity::discover_cgroup_mounts();
    std::ifstream in("/proc/self/cgroup");
    std::string line, path = "/";
    while (std::getline(in, line))
      if (line.starts_with("0::")) path = line.substr(3);
    return identity::cgroup_id_of(mounts.v2 + (path == "/" ? "" : path)).value_or(0);
  }();
  int fd = ::open(node.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 4; ++i) ::ioctl(fd, 0x30000001UL, nullptr);  // UVM_INITIALIZE
  ::close(fd);

  uint64_t seen = 0;
  for (const auto& [key, t] : plane.refresh())
    if (key.cgroup_id == self_cgroup && key.escape == 0x30000001u) seen += t.calls;
  EXPECT_GE(seen, 4u);  // other /dev/null ioctls on the node may use the same number: at least ours

  metrics::ExpositionWriter out;
  plane.write_metrics(out);
  EXPECT_NE(out.text().find("escape=\"UVM_INITIALIZE\""), std::string::npos) << out.text();
}

}  // namespace
}  // namespace gpuledger::device
