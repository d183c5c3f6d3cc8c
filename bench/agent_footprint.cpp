#include "agent_footprint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

namespace {

// One tenant process walks through `dirs`, one launch in each: each is a new
// workload to the kernel side (a map entry, a new-workload event).
double walk_through(const SimLibrary& lib, const std::vector<std::string>& dirs) {
  const auto start = Clock::now();
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
  return seconds_since(start);
}

std::vector<std::string> make_workload_cgroups(const BenchCgroups& cgroups, const std::string& parent, int from,
                                               int to) {
  std::vector<std::string> dirs;
  for (int i = from; i < to; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "%s/w%05d", parent.c_str(), i);
    dirs.push_back(cgroups.make(name));
  }
  return dirs;
}

double sample_value(const std::string& page, const std::string& family, const std::string& labels = "") {
  for (const auto& [l, v] : samples_of(page, family))
    if (l == labels || (labels.empty() && l.empty())) return v;
  return 0;
}

// What the agent holds and serves at one moment.
struct Footprint {
  std::string when;
  size_t series = 0;              // gpuledger_cuda_kernel_launches_total series
  double page_mib = 0;
  double page_seconds = 0;        // median of the scrapes, as the client saw it
  double build_seconds = 0;       // gpuledger_scrape_duration_seconds: the agent's own build time
  uint64_t rss_scraping_kib = 0;  // right after the scrapes
  uint64_t rss_settled_kib = 0;   // after the agent's periodic malloc_trim
  double directory = 0, map_entries = 0, lost = 0;
};

Footprint measure(const AgentProcess& agent, int ledger_interval_ms, const std::string& when) {
  constexpr int kScrapes = 5;
  Footprint f;
  f.when = when;
  std::vector<double> times;
  std::string page;
  for (int i = 0; i < kScrapes; ++i) {
    const auto start = Clock::now();
    page = agent.get("/metrics");
    times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  f.page_seconds = times[kScrapes / 2];
  f.series = samples_of(page, kLaunches).size();
  f.page_mib = page.size() / 1048576.0;
  f.build_seconds = sample_value(page, "gpuledger_scrape_duration_seconds");
  f.directory = sample_value(page, "gpuledger_workload_directory_entries");
  f.map_entries = sample_value(page, "gpuledger_bpf_map_entries", "{map=\"workload_counters\"}");
  f.lost = sample_value(page, "gpuledger_bpf_overflow_total", "{reason=\"workload_entry_allocation_failed\"}") +
           sample_value(page, "gpuledger_bpf_overflow_total", "{reason=\"workload_map_full\"}");
  f.rss_scraping_kib = agent.rss_kib();
  std::this_thread::sleep_for(std::chrono::milliseconds(ledger_interval_ms + 1000));  // malloc_trim after each observation
  f.rss_settled_kib = agent.rss_kib();
  return f;
}

// Waits until the agent's page shows `series` workloads (found, or retired).
void wait_for_series(const AgentProcess& agent, size_t series) {
  const auto start = Clock::now();
  while (samples_of(agent.get("/metrics"), kLaunches).size() != series) {
    if (seconds_since(start) > 180) throw Error("the agent did not reach " + std::to_string(series) + " workloads");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace

std::string measure_agent_memory(const SimLibrary& lib, const BenchCgroups& cgroups,
                                 const std::string& agent_binary, int workloads) {
  progress("agent memory: starting an agent process");
  const int few = workloads / 10;
  const uint32_t capacity = static_cast<uint32_t>(workloads + workloads / 5);
  // Gone workloads leave the snapshots 2 s after their cgroup (issue 10), or
  // after two ledger observations. The agent's default interval (5 s) for the
  // real figures: an observation of 10,000 workloads every second would starve
  // the scrapes on 2 vCPUs. One second for the smoke run's few workloads.
  const int ledger_interval_ms = workloads >= 1000 ? 5000 : 1000;
  AgentProcess agent(agent_binary, lib.path(),
                     {"--max-workloads", std::to_string(capacity), "--retire-after", "2s", "--ledger-interval-ms",
                      std::to_string(ledger_interval_ms)});
  agent.get("/metrics");
  std::vector<Footprint> rows;
  const uint64_t maps_before = agent.bpf_map_kib();
  rows.push_back(measure(agent, ledger_interval_ms, "idle, no workload"));

  auto start = Clock::now();
  auto live = make_workload_cgroups(cgroups, "live", 0, few);
  double walk_seconds = walk_through(lib, live);
  wait_for_series(agent, few);
  rows.push_back(measure(agent, ledger_interval_ms, std::to_string(few) + " live workloads"));
  progress("agent memory: %d live; growing to %d", few, workloads);
  auto more = make_workload_cgroups(cgroups, "live", few, workloads);
  walk_seconds += walk_through(lib, more);
  const double make_and_walk = seconds_since(start);
  wait_for_series(agent, workloads);
  rows.push_back(measure(agent, ledger_interval_ms, std::to_string(workloads) + " live workloads"));
  const uint64_t maps_full = agent.bpf_map_kib();

  progress("agent memory: removing the %d cgroups", workloads);
  cgroups.remove("live");
  wait_for_series(agent, 0);
  rows.push_back(measure(agent, ledger_interval_ms, "after the " + std::to_string(workloads) + " left (retired)"));

  constexpr int kBatches = 2;
  for (int b = 0; b < kBatches; ++b) {
    progress("agent memory: churn batch %d of %d short-lived workloads", b + 1, workloads);
    const std::string parent = "churn" + std::to_string(b);
    walk_through(lib, make_workload_cgroups(cgroups, parent, 0, workloads));
    wait_for_series(agent, workloads);
    cgroups.remove(parent);
    wait_for_series(agent, 0);
  }
  rows.push_back(measure(agent, ledger_interval_ms, "after " + std::to_string(kBatches) + " x " + std::to_string(workloads) +
                                    " more short-lived workloads, retired"));
  progress("agent memory: done; stopping the agent");

  MarkdownTable table({"When", "Launch series", "/metrics page", "Page time (median of 5; agent's build)",
                       "RSS right after the scrapes", "RSS settled (after malloc_trim)", "Directory entries",
                       "workload_counters entries", "Calls lost to __overflow__"});
  for (const auto& r : rows)
    table.add_row({r.when, std::to_string(r.series), fixed(r.page_mib, 2) + " MiB",
                   fixed(r.page_seconds * 1000, 1) + " ms (" + fixed(r.build_seconds * 1000, 1) + " ms)",
                   kib(r.rss_scraping_kib), kib(r.rss_settled_kib), fixed(r.directory, 0), fixed(r.map_entries, 0),
                   fixed(r.lost, 0)});
  const std::string n = std::to_string(workloads);
  return "## 3. Agent memory: " + std::to_string(few) + " and " + n + " live workloads, and after churn\n\n"
         "`gpuledger agent --no-discovery --max-workloads " + std::to_string(capacity) +
         " --retire-after 2s --ledger-interval-ms " + std::to_string(ledger_interval_ms) + "` as a "
         "separate process. Workloads are cgroups under " + cgroups.parent() + "; one tenant process moves "
         "through them (writing 0 to cgroup.procs) with one cuLaunchKernel in each (" +
         fixed(walk_seconds * 1e6 / workloads, 0) + " us per cgroup, " + fixed(make_and_walk, 1) +
         " s to make and walk " + n + "). Each row: five /metrics scrapes, RSS (VmRSS) right after them and " +
         fixed(ledger_interval_ms / 1000.0 + 1, 0) + " s later (the agent hands freed heap back with malloc_trim every "
         "--ledger-interval-ms). "
         "Live rows are cgroups that exist; the last rows come after their removal and --retire-after. "
         "BPF maps (kernel memory, fdinfo memlock, not in RSS): " + kib(maps_before) + " idle, " + kib(maps_full) +
         " with " + n + " workloads.\n\n" + table.render();
}

}  // namespace gpuledger::bench
