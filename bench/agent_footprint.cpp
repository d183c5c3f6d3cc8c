#include "agent_footprint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "agent_process.h"
#include "cgroup_tree.h"
#include "common/error.h"
#include "report.h"
#include "sim_library.h"

namespace gpuledger::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A tenant: a forked child of the benchmark running `body`, whose one line of
// output comes back through a pipe. Forked rather than exec'd so it calls the
// same private simulator copy, in a tight loop with nothing else in the way.
// Killed and reaped on destruction if still running.
class ForkedTenant {
 public:
  explicit ForkedTenant(const std::function<std::string()>& body) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw Error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw Error("fork failed");
    if (pid_ == 0) {
      ::close(fds[0]);
      int status = 0;
      std::string out;
      try {
        out = body();
      } catch (const std::exception& e) {
        out = std::string("error: ") + e.what();
        status = 1;
      }
      out += "\n";
      [[maybe_unused]] auto n = ::write(fds[1], out.data(), out.size());
      _exit(status);
    }
    ::close(fds[1]);
    read_fd_ = fds[0];
  }
  ~ForkedTenant() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (read_fd_ >= 0) ::close(read_fd_);
  }
  ForkedTenant(const ForkedTenant&) = delete;
  ForkedTenant& operator=(const ForkedTenant&) = delete;

  // Waits for the tenant; its output line, or Error when it failed.
  std::string result() {
    std::string out;
    char buf[256];
    for (ssize_t n; (n = ::read(read_fd_, buf, sizeof(buf))) != 0;)
      if (n > 0) out.append(buf, n);
      else if (errno != EINTR) break;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw Error("tenant failed: " + out);
    return out;
  }

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
  bool reaped_ = false;
};

// The samples of one metric family in a Prometheus text page: label set and value.
std::vector<std::pair<std::string, double>> samples_of(const std::string& page, const std::string& family) {
  std::vector<std::pair<std::string, double>> out;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(family, 0) != 0 || line.size() <= family.size() ||
        (line[family.size()] != '{' && line[family.size()] != ' '))
      continue;
    auto space = line.rfind(' ');
    out.emplace_back(line.substr(family.size(), space - family.size()), std::stod(line.substr(space + 1)));
  }
  return out;
}

// /proc/PID/stat counts whole clock ticks: below one, say so rather than "0 %".
std::string agent_cpu_text(double cpu_seconds, double wall_seconds) {
  const double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (cpu_seconds < tick)
    return "< 1 clock tick (" + fixed(tick * 1000, 0) + " ms) = < " + fixed(100 * tick / wall_seconds, 2) +
           " % of one core";
  return fixed(cpu_seconds * 1000, 0) + " ms = " + fixed(100 * cpu_seconds / wall_seconds, 2) + " % of one core";
}

constexpr const char* kLaunches = "gpuledger_cuda_kernel_launches_total";

std::string kib(uint64_t v) { return std::to_string(v) + " KiB"; }

}  // namespace

std::string measure_agent_cpu(const SimLibrary& lib, const BenchCgroups& cgroups, const std::string& agent_binary,
                              int seconds) {
  progress("agent cpu: starting an agent process");
  AgentProcess agent(agent_binary, lib.path());
  agent.get("/metrics");  // the first scrape's one-off allocations stay out of the window
  progress("agent cpu: %d s of launches", seconds);
  const std::string tenant_dir = cgroups.make("cpu-tenant");

  const double cpu_before = agent.cpu_seconds();
  const auto start = Clock::now();
  ForkedTenant tenant([&] {
    if (!BenchCgroups::move_self_to_noexcept(tenant_dir.c_str())) throw Error("cannot join " + tenant_dir);
    CudaSession session(lib.api());
    const auto begin = Clock::now(), end = begin + std::chrono::seconds(seconds);
    uint64_t calls = 0;
    while (Clock::now() < end)  // the clock is read once per 1024 launches
      for (int i = 0; i < 1024; ++i, ++calls)
        if (session.launch() != CUDA_SUCCESS) throw Error("cuLaunchKernel failed");
    return std::to_string(calls) + " " + std::to_string(seconds_since(begin));
  });
  // Scraped once per second meanwhile, as Prometheus would (more often, really).
  int scrapes = 0;
  for (int i = 1; i <= seconds; ++i) {
    std::this_thread::sleep_until(start + std::chrono::seconds(i));
    agent.get("/metrics");
    ++scrapes;
  }
  std::istringstream result(tenant.result());
  uint64_t calls = 0;
  double tenant_seconds = 0;
  result >> calls >> tenant_seconds;
  const double wall = seconds_since(start);
  const double cpu = agent.cpu_seconds() - cpu_before;

  double counted = 0;
  for (const auto& [labels, value] : samples_of(agent.get("/metrics"), kLaunches)) counted += value;
  cgroups.remove("cpu-tenant");
  progress("agent cpu: done; stopping the agent");

  MarkdownTable table({"Measure", "Value"});
  table.add_row({"Tenant: cuLaunchKernel calls/s (one thread, flat out)", fixed(calls / tenant_seconds, 0)});
  table.add_row({"Tenant: ns per launch, probe included", fixed(tenant_seconds * 1e9 / calls, 1)});
  table.add_row({"Launches counted by the agent / made", fixed(counted, 0) + " / " + std::to_string(calls)});
  table.add_row({"/metrics scrapes in the window", std::to_string(scrapes)});
  table.add_row({"Window (wall)", fixed(wall, 2) + " s"});
  table.add_row({"Agent CPU (utime+stime)", agent_cpu_text(cpu, wall)});
  return "## 2. Agent CPU under a flat-out tenant\n\n"
         "`gpuledger agent --no-discovery` as a separate process; a tenant in its own cgroup calls "
         "cuLaunchKernel in a loop. The BPF handlers run in the tenant's context, so their time is "
         "charged to the tenant (that is what part 1 measures), not to the agent: the agent's CPU "
         "here is its event loop and the scrapes.\n\n" +
         table.render();
}

std::string measure_agent_memory(const SimLibrary& lib, const BenchCgroups& cgroups,
                                 const std::string& agent_binary, int workloads) {
  progress("agent memory: starting an agent process");
  const uint32_t capacity = static_cast<uint32_t>(workloads + workloads / 5);
  // Gone workloads leave the snapshots 2 s after their cgroup (issue 10): the
  // page and RSS after the churn below show what history costs.
  AgentProcess agent(agent_binary, lib.path(), {"--max-workloads", std::to_string(capacity), "--retire-after", "2s"});
  agent.get("/metrics");
  const uint64_t rss_before = agent.rss_kib(), maps_before = agent.bpf_map_kib();

  auto start = Clock::now();
  std::vector<std::string> dirs;
  for (int i = 0; i < workloads; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "workloads/w%05d", i);
    dirs.push_back(cgroups.make(name));
  }
  const double create_seconds = seconds_since(start);
  progress("agent memory: %d cgroups made; one launch in each", workloads);

  // One process walks through every cgroup, one launch in each: each is a new
  // workload to the kernel side (a map entry, a new-workload event).
  start = Clock::now();
  ForkedTenant tenant([&] {
    std::unique_ptr<CudaSession> session;
    for (const auto& dir : dirs) {
      if (!BenchCgroups::move_self_to_noexcept(dir.c_str())) throw Error("cannot join " + dir);
      if (!session) session = std::make_unique<CudaSession>(lib.api());
      if (session->launch() != CUDA_SUCCESS) throw Error("cuLaunchKernel failed");
    }
    return std::string("ok");
  });
  tenant.result();
  const double walk_seconds = seconds_since(start);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the agent drains its event ring
  // Before any scrape: what holding the workloads costs, apart from what
  // rendering a page for all of them leaves behind in the heap.
  const uint64_t rss_unscraped = agent.rss_kib();
  progress("agent memory: scraping");

  start = Clock::now();
  const std::string metrics = agent.get("/metrics");
  const double metrics_seconds = seconds_since(start);
  start = Clock::now();
  const std::string api = agent.get("/api/v1/workloads");
  const double api_seconds = seconds_since(start);
  const uint64_t rss_after = agent.rss_kib(), maps_after = agent.bpf_map_kib();

  size_t series = 0, series_with_launch = 0;
  for (const auto& [labels, value] : samples_of(metrics, kLaunches)) {
    ++series;
    if (value >= 1) ++series_with_launch;
  }
  const size_t api_workloads = nlohmann::json::parse(api)["workloads"].size();

  start = Clock::now();
  cgroups.remove("workloads");
  const double remove_seconds = seconds_since(start);
  progress("agent memory: cgroups removed; waiting for the workloads to retire");
  start = Clock::now();
  std::string after_churn = agent.get("/metrics");
  while (!samples_of(after_churn, kLaunches).empty() && seconds_since(start) < 120) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    after_churn = agent.get("/metrics");
  }
  const double retire_seconds = seconds_since(start);
  const size_t series_after_churn = samples_of(after_churn, kLaunches).size();
  const uint64_t rss_after_churn = agent.rss_kib();
  progress("agent memory: done; stopping the agent");

  const std::string n = std::to_string(workloads);
  MarkdownTable table({"Measure", "Value"});
  table.add_row({"Agent RSS before the workloads (VmRSS)", kib(rss_before)});
  auto per_workload = [&](uint64_t rss) {
    return fixed(1024.0 * (static_cast<double>(rss) - static_cast<double>(rss_before)) / workloads, 0) +
           " bytes per workload";
  };
  table.add_row({"Agent RSS with " + n + " workloads, before any scrape", kib(rss_unscraped) + " (" +
                                                                             per_workload(rss_unscraped) + ")"});
  table.add_row({"Agent RSS after one /metrics and one /api/v1/workloads scrape",
                 kib(rss_after) + " (" + per_workload(rss_after) + ")"});
  table.add_row({"BPF maps before / after (fdinfo memlock; kernel memory, not in RSS)",
                 kib(maps_before) + " / " + kib(maps_after)});
  table.add_row({std::string(kLaunches) + " series (value >= 1)",
                 std::to_string(series) + " (" + std::to_string(series_with_launch) + ")" +
                     (series_with_launch == static_cast<size_t>(workloads) ? "" : "  <-- expected " + n)});
  table.add_row({"Workloads in /api/v1/workloads", std::to_string(api_workloads)});
  // The agent's own account of what it lost, should the counts above fall short.
  for (const auto& family : {"gpuledger_events_dropped_total", "gpuledger_bpf_overflow_total",
                             "gpuledger_workloads_retired_total", "gpuledger_bpf_map_entries"})
    for (const auto& [labels, value] : samples_of(metrics, family))
      if (value != 0) table.add_row({std::string("Agent: ") + family + labels, fixed(value, 0)});
  for (const auto& [labels, value] : samples_of(metrics, kLaunches))
    if (labels.find("workload=\"__overflow__\"") != std::string::npos || labels.find("cgroup-id/") != std::string::npos)
      table.add_row({std::string("Agent: ") + kLaunches + labels, fixed(value, 0)});
  table.add_row({"/metrics page", fixed(metrics.size() / 1048576.0, 1) + " MiB in " + fixed(metrics_seconds, 2) + " s"});
  table.add_row({"/api/v1/workloads page", fixed(api.size() / 1048576.0, 1) + " MiB in " + fixed(api_seconds, 2) + " s"});
  table.add_row({"After the cgroups are removed (--retire-after 2s): " + std::string(kLaunches) + " series",
                 std::to_string(series_after_churn) + " after " + fixed(retire_seconds, 1) + " s"});
  table.add_row({"After the churn: /metrics page, agent RSS", fixed(after_churn.size() / 1024.0, 1) + " KiB, " +
                                                                   kib(rss_after_churn)});
  table.add_row({"Bench overhead: mkdir / rmdir of the cgroups", fixed(create_seconds, 1) + " s / " +
                                                                     fixed(remove_seconds, 1) + " s"});
  table.add_row({"Bench overhead: tenant move + launch, per cgroup", fixed(walk_seconds * 1e6 / workloads, 0) + " us"});
  return "## 3. Agent memory with " + n + " workloads\n\n"
         "`gpuledger agent --no-discovery --max-workloads " + std::to_string(capacity) + "` as a separate "
         "process; " + n + " cgroups under " + cgroups.parent() + "/workloads, one tenant process "
         "moving through them (writing 0 to cgroup.procs) with one cuLaunchKernel in each; then one "
         "scrape of each endpoint.\n\n" +
         table.render();
}

}  // namespace gpuledger::bench
