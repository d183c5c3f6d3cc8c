// Hostile tenants, as real processes, mount namespaces and cgroups against
// the real agent and its real BPF programs. Each test is an attack that
// worked on an earlier agent; each must fail here (docs/security.md).
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "export/http_server.h"
#include "exposition_parser.h"
#include "node/served_content.h"
#include "probes/library_discovery.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using simulation::ScopedCgroup;

attribution::AttributionOptions hostile_options() {
  attribution::AttributionOptions options;
  options.cuda_libs = {kSimLib};
  options.discover = true;  // the attacks go through discovery
  options.scan_interval = std::chrono::milliseconds(200);
  options.classifier.cgroup_roots = {test_cgroup("")};
  return options;
}

fs::path scratch(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("gl-hostile-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class HostileTenant : public ::testing::Test {
 protected:
  void SetUp() override { GL_REQUIRE_BPF(); }
};

// The driver loaded through a renamed copy (libgpushim.so, reached through a
// libcuda.so.1 symlink) is found by its symbols and counted exactly.
TEST_F(HostileTenant, ARenamedDriverCopyIsCountedLikeLibcuda) {
  attribution::AttributionPlane agent(hostile_options());
  agent.start();
  const auto dir = scratch("renamed");
  fs::copy_file(kSimLib, dir / "libgpushim.so");
  fs::create_symlink("libgpushim.so", dir / "libcuda.so.1");
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/evader.service"));
  auto child = start_interactive_tenant({cg.dir()}, "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x5000; exit 0",
                                        {"LD_LIBRARY_PATH=" + dir.string()});
  await_ready(*child);
  const auto shim = probes::file_id_of((dir / "libgpushim.so").string()).value();
  auto covered = [&] {
    for (const auto& lib : agent.snapshot().self.libraries)
      if (lib.file == shim) return true;
    return false;
  };
  ASSERT_TRUE(eventually(covered)) << "the renamed copy was never probed";
  finish_interactive_tenant(*child);
  const auto* w = find_workload(agent.snapshot(), "systemd/evader.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 5000u);
  agent.stop();
  fs::remove_all(dir);
}

// A process in its own mount namespace maps a driver-looking ELF, then swaps
// its path for a symlink to a host file (and back, racing), over and over.
// Attaching through the path would plant breakpoints in the host file; the
// host file's bytes as mapped by another process must never change.
TEST_F(HostileTenant, ASymlinkSwapNeverPlantsBreakpointsInAHostFile) {
  attribution::AttributionPlane agent(hostile_options());
  agent.start();
  const auto dir = scratch("swap");
  // The victim: a host library mapped executable by an innocent process (us).
  const fs::path victim = dir / "victim" / "libc.so.6";
  fs::create_directories(victim.parent_path());
  fs::copy_file("/lib/x86_64-linux-gnu/libc.so.6", victim);
  const std::string on_disk = read_bytes(victim);
  int vfd = ::open(victim.c_str(), O_RDONLY);
  ASSERT_GE(vfd, 0);
  auto* mapped = static_cast<const char*>(::mmap(nullptr, on_disk.size(), PROT_READ | PROT_EXEC, MAP_PRIVATE, vfd, 0));
  ASSERT_NE(mapped, MAP_FAILED);
  ::close(vfd);

  const fs::path bait = dir / "atk" / "libcuda.so.1";
  fs::create_directories(bait.parent_path());
  pid_t attacker = ::fork();
  ASSERT_GE(attacker, 0);
  if (attacker == 0) {
    // Its own mount namespace, as a container has.
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(2);
    // Bounded: each round is a new file the agent judges (and, being a
    // driver-looking ELF of the attacker's own, probes harmlessly).
    std::vector<std::pair<void*, size_t>> maps;
    for (int round = 0; round < 40; ++round) {
      std::error_code ec;
      fs::remove(bait, ec);
      fs::copy_file(kSimLib, bait, ec);
      int fd = ::open(bait.c_str(), O_RDONLY);
      if (fd < 0) _exit(3);
      struct stat st {};
      ::fstat(fd, &st);
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
      ::close(fd);
      if (p != MAP_FAILED) maps.emplace_back(p, static_cast<size_t>(st.st_size));
      // Swap the path for a symlink to the host file, racing the agent's look.
      fs::remove(bait, ec);
      fs::create_symlink(victim, bait, ec);
      ::usleep(static_cast<useconds_t>(round % 2 ? 2000 : 200));
      if (maps.size() > 8) {
        ::munmap(maps.front().first, maps.front().second);
        maps.erase(maps.begin());
      }
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(attacker, &status, 0), attacker);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // Let the agent finish whatever it was doing with the last reports.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  const auto victim_id = probes::file_id_of(victim.string()).value();
  size_t attached_copies = 0;
  for (const auto& lib : agent.snapshot().self.libraries) {
    EXPECT_NE(lib.file, victim_id) << "probes on the host file";
    attached_copies += lib.path.find("libcuda.so.1") != std::string::npos && lib.path.find("atk") != std::string::npos;
  }
  // The attacker's own copies were probed (harmlessly), then detached once it
  // and they were gone: either way the race was really run.
  EXPECT_GT(attached_copies + agent.snapshot().self.libraries_detached, 0u) << "the race was not run";
  size_t changed = 0;
  for (size_t i = 0; i < on_disk.size(); ++i) changed += mapped[i] != on_disk[i];
  EXPECT_EQ(changed, 0u) << "bytes of the host file changed as mapped";
  ::munmap(const_cast<char*>(mapped), on_disk.size());
  agent.stop();
  fs::remove_all(dir);
}

// A tenant with a writable cgroup subtree (here: a user's systemd manager)
// builds a path that ends like a victim's pod. It must be billed as itself;
// the victim keeps exactly its own calls.
TEST_F(HostileTenant, APodPathBuiltInsideAUsersTreeIsNotThatPod) {
  attribution::AttributionPlane agent(hostile_options());
  agent.start();
  const std::string uid = "5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716";
  const std::string cid_victim(64, 'd');
  const std::string cid_fake = std::string(32, 'e') + std::string(32, '3');
  ScopedCgroup victim(mounts().v2, test_cgroup("/kubepods/burstable/pod" + uid + "/" + cid_victim));
  ScopedCgroup fake(mounts().v2, test_cgroup("/user.slice/user-1000.slice/user@1000.service/app.slice/kubepods/"
                                             "burstable/pod" + uid + "/" + cid_fake));
  ASSERT_EQ(run_tenant({victim.dir()}, "init; launch 1 1 1 1 1 1 x10", {}, {"--quiet"}).exit_code, 0);
  ASSERT_EQ(run_tenant({fake.dir()}, "init; launch 1 1 1 1 1 1 x1000", {}, {"--quiet"}).exit_code, 0);
  auto snap = agent.snapshot();
  const auto* v = find_workload(snap, "k8s/" + uid + "/" + cid_victim);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->usage.counters.launches, 10u);
  const auto* f = find_workload(snap, "systemd/user@1000.service");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->usage.counters.launches, 1000u);
  for (const auto& w : snap.workloads) {
    if (w.workload.pod_uid == uid) {
      EXPECT_EQ(w.workload.id, v->workload.id) << "another workload took the pod's UID";
    }
  }
  agent.stop();
}

// Driver copies are bounded: past --max-libraries a copy is refused and
// counted, not probed; a copy no process maps and whose file is deleted is
// detached, which makes room for the one refused before.
TEST_F(HostileTenant, DriverCopiesMeetABoundAndDeletedOnesAreDetached) {
  attribution::AttributionOptions options = hostile_options();
  // The named simulator library, the driver files other processes on this
  // machine map now (discovery is node-wide), and one copy.
  std::set<probes::FileId> others;
  for (const auto& c : probes::scan_process_maps())
    if (probes::is_cuda_library_name(c.mapping.path)) others.insert(c.mapping.printed);
  // A driver installed on this machine takes a slot too, mapped or not.
  for (const auto& path : probes::default_driver_library_paths())
    if (auto id = probes::file_id_of(path)) others.insert(*id);
  others.erase(probes::file_id_of(kSimLib).value());
  options.max_libraries = 2 + others.size();
  attribution::AttributionPlane agent(options);
  agent.start();
  const auto dir_a = scratch("bound-a");
  const auto dir_b = scratch("bound-b");
  fs::copy_file(kSimLib, dir_a / "libcuda.so.1");
  fs::copy_file(kSimLib, dir_b / "libcuda.so.1");
  const auto id_a = probes::file_id_of((dir_a / "libcuda.so.1").string()).value();
  const auto id_b = probes::file_id_of((dir_b / "libcuda.so.1").string()).value();
  auto covered = [&](const probes::FileId& id) {
    for (const auto& lib : agent.snapshot().self.libraries)
      if (lib.file == id) return true;
    return false;
  };
  ScopedCgroup cg_a(mounts().v2, test_cgroup("/system.slice/bound-a.service"));
  ScopedCgroup cg_b(mounts().v2, test_cgroup("/system.slice/bound-b.service"));
  const char* script = "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x3; exit 0";
  auto a = start_interactive_tenant({cg_a.dir()}, script, {"LD_LIBRARY_PATH=" + dir_a.string()});
  await_ready(*a);
  ASSERT_TRUE(eventually([&] { return covered(id_a); }));
  auto b = start_interactive_tenant({cg_b.dir()}, script, {"LD_LIBRARY_PATH=" + dir_b.string()});
  await_ready(*b);
  ASSERT_TRUE(eventually([&] { return agent.snapshot().self.library_limit_rejections >= 1; }));
  EXPECT_FALSE(covered(id_b)) << "past the bound";
  EXPECT_EQ(agent.snapshot().self.libraries.size(), options.max_libraries);

  finish_interactive_tenant(*a);
  fs::remove(dir_a / "libcuda.so.1");  // unmapped and deleted: detached at the next scan
  ASSERT_TRUE(eventually([&] { return !covered(id_a); }, std::chrono::milliseconds(5000)));
  EXPECT_EQ(agent.snapshot().self.libraries_detached, 1u);
  ASSERT_TRUE(eventually([&] { return covered(id_b); }, std::chrono::milliseconds(5000))) << "room made";
  finish_interactive_tenant(*b);
  const auto snap = agent.snapshot();
  EXPECT_EQ(find_workload(snap, "systemd/bound-a.service")->usage.counters.launches, 3u);
  EXPECT_EQ(find_workload(snap, "systemd/bound-b.service")->usage.counters.launches, 3u);
  agent.stop();
  fs::remove_all(dir_a);
  fs::remove_all(dir_b);
}

// A cgroup name that is not UTF-8 cannot make the node's page unparsable.
TEST_F(HostileTenant, AnInvalidUtf8CgroupNameLeavesMetricsValid) {
  attribution::AttributionPlane agent(hostile_options());
  agent.start();
  exporter::HttpServer server(node::served_content(agent));
  const int port = server.start("127.0.0.1", 0);
  ScopedCgroup bad(mounts().v2, test_cgroup("/system.slice/bad\xff\xfe\xc3(name.service"));
  ASSERT_EQ(run_tenant({bad.dir()}, "init; launch 1 1 1 1 1 1 x3", {}, {"--quiet"}).exit_code, 0);
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("bad\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD(name.service"), std::string::npos)
      << "the bytes are replaced, not dropped";
  // Prometheus's own parser judges the page.
  const auto page = scratch("utf8") / "metrics.txt";
  std::ofstream(page) << res->body;
  const std::string cmd = "promtool check metrics < " + page.string() + " 2>&1";
  FILE* out = ::popen(cmd.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string report;
  char buf[512];
  while (::fgets(buf, sizeof(buf), out)) report += buf;
  const int rc = ::pclose(out);
  EXPECT_EQ(report.find("UTF-8"), std::string::npos) << report;
  EXPECT_EQ(report.find("error"), std::string::npos) << report;
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << report;
  auto json = client.Get("/api/v1/workloads");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200);
  EXPECT_TRUE(nlohmann::json::accept(json->body));
  server.stop();
  agent.stop();
  fs::remove_all(page.parent_path());
}

}  // namespace
}  // namespace gpuledger::testing
