// Issue 10, item 3: a corrupt store or a read-only store directory exited the
// agent, taking attribution and /metrics down with the ledger. Now the agent
// serves attribution, the ledger says it is degraded and why, and it comes
// back by itself once the store can be written.
#include <gtest/gtest.h>

#include <fstream>

#include "bpf_requirement.h"
#include "cli_process.h"
#include "exposition_parser.h"
#include "reliability_support.h"
#include "simulation/tenant.h"

namespace gpuledger::testing {
namespace {

bool has_line(const std::string& page, const std::string& line) {
  return page.find("\n" + line + "\n") != std::string::npos;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Attribution goes on: a tenant's launches are counted and served.
void expect_attribution(int port, const std::string& service) {
  simulation::ScopedCgroup cg(cgroup_v2(), test_cgroup("/system.slice/" + service));
  simulation::Child tenant({cudasim_binary(), "init; launch 1 1 1 1 1 1 x3"}, {{cg.dir()}, {}, false, true});
  tenant.read_all();
  ASSERT_EQ(tenant.wait(), 0);
  const std::string line = "gpuledger_cuda_kernel_launches_total{workload=\"systemd/" + service + "\"";
  EXPECT_TRUE(eventually(
      [&] {
        std::string page = get_body(port, "/metrics");
        auto at = page.find(line);
        return at != std::string::npos && page.substr(page.find('\n', at) - 2, 2) == " 3";
      },
      std::chrono::milliseconds(5000)))
      << get_body(port, "/metrics");
}

TEST(StoreFaults, ACorruptStoreDegradesTheLedgerOnly) {
  GL_REQUIRE_BPF();
  Scratch scratch("corrupt");
  {
    std::ofstream junk(scratch.path("ledger.db"), std::ios::binary);
    for (int i = 0; i < 4096; ++i) junk << "not a database, but a file the disk mangled\n";
  }
  Agent agent({"--no-discovery", "--cuda-lib", sim_library(), "--store", scratch.path("ledger.db"),
               "--ledger-interval-ms", "200"});
  int status = 0;
  std::string health = get_body(agent.port(), "/healthz", &status);
  EXPECT_EQ(status, 200) << "liveness: restarting would not mend the store\n" << health;
  EXPECT_NE(health.find("\n- ledger degraded: ledger store " + scratch.path("ledger.db") +
                        ": not a usable SQLite database (corrupt, or not a gpuledger store)"),
            std::string::npos)
      << health;
  EXPECT_NE(health.find("(corrupt; retrying in "), std::string::npos) << health;
  EXPECT_EQ(timed_get(agent.port(), "/readyz"), 200) << "readiness is about the probes";
  std::string page = get_body(agent.port(), "/metrics");
  EXPECT_TRUE(has_line(page, "gpuledger_ledger_up 0")) << page;
  // One error per attempt: the first at start, then one each time the backoff
  // (1 s, doubling) runs out, however slowly this machine served the checks
  // above. Each attempt logs one line, read after the page.
  const auto corrupt = sample_value(parse_exposition(page), "gpuledger_ledger_errors_total", {{"reason", "corrupt"}});
  ASSERT_TRUE(corrupt.has_value()) << page;
  EXPECT_GE(*corrupt, 1) << page;
  EXPECT_LE(*corrupt, static_cast<double>(count_of(agent.log(), "ledger degraded (corrupt)"))) << agent.log();
  EXPECT_TRUE(has_line(page, "gpuledger_ledger_errors_total{reason=\"full\"} 0")) << page;
  expect_attribution(agent.port(), "corrupt-store.service");
  EXPECT_NE(agent.log().find("ledger degraded (corrupt)"), std::string::npos) << agent.log();
}

// A small tmpfs under the store, mounted read-only or read-write (root writes
// anywhere else, and fills no real disk).
class ScratchMount {
 public:
  ScratchMount(const fs::path& dir, const std::string& options) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = run("mount -t tmpfs -o " + options + " tmpfs " + dir.string()).status == 0;
  }
  ~ScratchMount() {
    if (mounted_) run("umount -l " + dir_.string());
  }
  bool mounted() const { return mounted_; }
  bool make_writable() { return run("mount -o remount,rw " + dir_.string()).status == 0; }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

TEST(StoreFaults, AReadOnlyStoreDirectoryDegradesTheLedgerUntilItIsWritable) {
  GL_REQUIRE_BPF();
  Scratch scratch("readonly");
  ScratchMount ro(scratch.dir() / "ro", "ro,size=4m");
  ASSERT_TRUE(ro.mounted());
  const std::string store = (scratch.dir() / "ro" / "ledger.db").string();
  auto agent = std::make_unique<Agent>(std::vector<std::string>{"--no-discovery", "--cuda-lib", sim_library(),
                                                                "--store", store, "--ledger-interval-ms", "200"});
  int status = 0;
  std::string health = get_body(agent->port(), "/healthz", &status);
  EXPECT_EQ(status, 200) << health;
  EXPECT_NE(health.find("\n- ledger degraded: the ledger store " + store + ": cannot open lock file " + store +
                        ".lock: Read-only file system (read_only; retrying in "),
            std::string::npos)
      << health;
  std::string page = get_body(agent->port(), "/metrics");
  EXPECT_TRUE(has_line(page, "gpuledger_ledger_up 0")) << page;
  EXPECT_NE(page.find("\ngpuledger_ledger_errors_total{reason=\"read_only\"} "), std::string::npos) << page;
  expect_attribution(agent->port(), "readonly-store.service");

  // Writable again: the ledger opens the store on its next try (backoff from 1 s).
  ASSERT_TRUE(ro.make_writable());
  EXPECT_TRUE(eventually([&] { return has_line(get_body(agent->port(), "/metrics"), "gpuledger_ledger_up 1"); },
                         std::chrono::milliseconds(20000)))
      << agent->log();
  EXPECT_NE(get_body(agent->port(), "/healthz").find("\n- ledger writing to " + store + "\n"), std::string::npos);
  EXPECT_NE(agent->log().find("ledger: the store " + store + " works again"), std::string::npos) << agent->log();
  agent.reset();  // closes the store before the file system goes
  EXPECT_TRUE(fs::exists(store));
}

// The disk under the store fills up while the agent writes windows: the
// ledger is degraded (reason full) while attribution goes on, and writes
// again once there is room.
TEST(StoreFaults, AFullDiskDegradesTheLedgerUntilThereIsRoom) {
  GL_REQUIRE_BPF();
  Scratch scratch("full");
  constexpr int kWindow = 5;
  write_simulated_node(scratch, kWindow);
  ScratchMount disk(scratch.dir() / "disk", "size=1m");
  ASSERT_TRUE(disk.mounted());
  const std::string store = (scratch.dir() / "disk" / "ledger.db").string();
  auto agent = std::make_unique<Agent>(simulated_node_agent_args(scratch, store));
  auto page = [&] { return get_body(agent->port(), "/metrics"); };
  ASSERT_TRUE(eventually([&] { return has_line(page(), "gpuledger_ledger_windows_total 1"); },
                         std::chrono::milliseconds(3 * kWindow * 1000)))
      << agent->log();
  EXPECT_TRUE(has_line(page(), "gpuledger_ledger_up 1"));
  // Fill the disk: the next window cannot be written.
  run("dd if=/dev/zero of=" + (scratch.dir() / "disk" / "filler").string() + " bs=64k 2>/dev/null");
  ASSERT_TRUE(eventually([&] { return has_line(page(), "gpuledger_ledger_up 0"); },
                         std::chrono::milliseconds(3 * kWindow * 1000)))
      << agent->log();
  EXPECT_EQ(page().find("gpuledger_ledger_errors_total{reason=\"full\"} 0\n"), std::string::npos) << page();
  std::string health = get_body(agent->port(), "/healthz");
  EXPECT_NE(health.find("\n- ledger degraded: ledger store " + store + ": database or disk is full"),
            std::string::npos)
      << health;
  expect_attribution(agent->port(), "full-disk.service");
  // Room again: the ledger writes, and is up once it has written a window.
  fs::remove(scratch.dir() / "disk" / "filler");
  EXPECT_TRUE(eventually([&] { return has_line(page(), "gpuledger_ledger_up 1"); },
                         std::chrono::milliseconds(6 * kWindow * 1000)))
      << agent->log();
  EXPECT_NE(agent->log().find("ledger: the store " + store + " works again"), std::string::npos) << agent->log();
  agent.reset();
}

}  // namespace
}  // namespace gpuledger::testing
