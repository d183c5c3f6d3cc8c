// gpuledger-report-bench: how long `gpuledger report` takes, and how much
// memory and disk, on a node-month of ledger (docs/performance.md, part 4).
//   1. writes the store as the agent would (node_month.h): 8 GPUs, 20
//      workloads, 60 s windows, 30 days, rolled up hourly after 24 h
//   2. runs `gpuledger report` over the whole month in every grouping and
//      format, as a separate process: wall time and peak RSS (wait4)
//   3. checks the bill: the JSON total equals every charge written, exactly
//   4. times an agent starting on it (its /metrics counters from the store)
// No root, no BPF: runs anywhere gpuledger builds.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ledger/accountant.h"
#include "node_month.h"
#include "report.h"

namespace {

namespace fs = std::filesystem;
using namespace gpuledger::bench;

struct Options {
  bool quick = false;
  bool raw = false;   // also a store that was never rolled up
  bool keep = false;  // leave the stores in --dir
  NodeMonthShape shape;
  std::string markdown;
  std::string gpuledger;
  std::string dir;
};

struct Run {
  double seconds = 0;
  double cpu_seconds = 0;  // user + system: what the report costs, whatever else runs
  long max_rss_kib = 0;
  int status = -1;
};

Run run_report(const std::string& binary, const std::vector<std::string>& args, const std::string& out) {
  std::vector<std::string> argv = {binary, "report"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("-o");
  argv.push_back(out);
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const auto began = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(binary.c_str(), cargv.data());
    ::_exit(127);
  }
  Run r;
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  r.max_rss_kib = usage.ru_maxrss;
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  r.cpu_seconds = secs(usage.ru_utime) + secs(usage.ru_stime);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string mib(double bytes) { return fixed(bytes / (1024.0 * 1024.0), 1) + " MiB"; }

// What a restarted agent spends on its counters: the Accountant reads the
// store's totals (SQL sums) and, for the share and carbon counters
// (share_seconds.h), every window once. Medians of `repeats`: the whole
// start, and that window pass alone.
std::pair<double, double> agent_start_seconds(const std::string& store, int repeats) {
  using gpuledger::ledger::WindowRecord;
  auto since = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::vector<double> starts, passes;
  for (int i = 0; i < repeats; ++i) {
    gpuledger::ledger::Store s(store);
    auto t0 = std::chrono::steady_clock::now();
    gpuledger::ledger::Accountant acc(s, gpuledger::ledger::PriceBook{});
    starts.push_back(since(t0));
    t0 = std::chrono::steady_clock::now();
    s.for_each_window(INT64_MIN, INT64_MAX, [&](WindowRecord&& w) {
      (void)gpuledger::ledger::share_seconds(w);
      (void)gpuledger::ledger::carbon_grams(w);
    });
    passes.push_back(since(t0));
  }
  std::sort(starts.begin(), starts.end());
  std::sort(passes.begin(), passes.end());
  return {starts[starts.size() / 2], passes[passes.size() / 2]};
}

std::string measure_store(const Options& o, const std::string& label, const NodeMonthShape& shape,
                          bool& ok) {
  const std::string store = o.dir + "/" + label + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(store + suffix);
  progress("writing %s (%d GPUs, %d workloads, %d days of %d s windows, rollup after %d h)", store.c_str(),
           shape.gpus, shape.workloads, shape.days, shape.window_seconds, shape.rollup_after_hours);
  const NodeMonthStats st = write_node_month(store, shape);
  const std::string from = std::to_string(shape.start);
  const std::string to = std::to_string(shape.start + int64_t{shape.days} * 86400);
  const std::pair<double, double> start = agent_start_seconds(store, o.quick ? 1 : 3);
  std::ostringstream out;
  out << "### Store: " << label << "\n\n"
      << "| | |\n|---|---|\n"
      << "| Windows written (GPU x window) | " << st.windows_written << " |\n"
      << "| Windows stored | " << st.windows_stored << " |\n"
      << "| Store on disk | " << mib(static_cast<double>(st.bytes)) << " |\n"
      << "| Writing it (and rolling up every hour) | " << fixed(st.seconds, 1) << " s |\n"
      << "| An agent starting on it (its /metrics counters from the store, median of 3) | " << fixed(start.first, 3)
      << " s |\n"
      << "| of which the pass over every window for the share and carbon counters | " << fixed(start.second, 3)
      << " s |\n\n";

  // The bill is exact: every micro-unit written is in the report's total.
  const std::string json_out = o.dir + "/report.json";
  Run check = run_report(o.gpuledger, {"--store", store, "--from", from, "--to", to, "--format", "json"}, json_out);
  std::ifstream in(json_out);
  int64_t billed = -1, energy = -1;
  try {
    const auto total = nlohmann::json::parse(in)["total"];
    billed = total["cost_total_micros"].get<int64_t>();
    energy = total["energy_millijoules"].is_null() ? 0 : total["energy_millijoules"].get<int64_t>();
  } catch (const std::exception&) {
  }
  out << "Bill check: charges written " << st.cost_micros << " micro-units, report total " << billed << ": "
      << (billed == st.cost_micros ? "exact" : "MISMATCH") << ". Energy written " << st.energy_millijoules
      << " mJ, report total " << energy << ": " << (energy == st.energy_millijoules ? "exact" : "MISMATCH")
      << ".\n\n";
  if (check.status != 0 || billed != st.cost_micros || energy != st.energy_millijoules) ok = false;

  MarkdownTable table({"--by", "--format", "wall s (median of 3)", "max", "CPU s (median)", "peak RSS"});
  const int repeats = o.quick ? 1 : 3;
  for (const char* by : {"team", "namespace", "pod", "workload", "gpu"}) {
    for (const char* format : {"table", "csv", "json", "html"}) {
      std::vector<Run> runs;
      for (int i = 0; i < repeats; ++i)
        runs.push_back(run_report(o.gpuledger,
                                  {"--store", store, "--from", from, "--to", to, "--by", by, "--format", format},
                                  "/dev/null"));
      std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.seconds < b.seconds; });
      long rss = 0;
      std::vector<double> cpu;
      for (const auto& r : runs) {
        rss = std::max(rss, r.max_rss_kib);
        cpu.push_back(r.cpu_seconds);
        if (r.status != 0) ok = false;
      }
      std::sort(cpu.begin(), cpu.end());
      table.add_row({by, format, fixed(runs[runs.size() / 2].seconds, 3), fixed(runs.back().seconds, 3),
                     fixed(cpu[cpu.size() / 2], 3), mib(static_cast<double>(rss) * 1024.0)});
    }
  }
  progress("timed %s", label.c_str());
  out << table.render() << "\n";
  if (!o.keep)
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(store + suffix);
  fs::remove(json_out);
  return out.str();
}

void usage(const char* argv0) {
  std::printf(
      "usage: %s [--quick] [--raw] [--keep] [--days N] [--rollup-after-hours H] [--markdown FILE] [--gpuledger PATH]"
      " [--dir DIR]\n"
      "  --quick          one day instead of thirty, one run per report (a smoke test)\n"
      "  --raw            also time a store that was never rolled up (every 60 s window kept)\n"
      "  --keep           leave the stores in --dir (to look at the reports)\n"
      "  --days N         days of ledger (default 30)\n"
      "  --rollup-after-hours H   as the agent's `rollup_after_hours` (default 24)\n"
      "  --markdown FILE  also write the report to FILE\n"
      "  --gpuledger PATH the gpuledger binary (default: next to this one)\n"
      "  --dir DIR        where to write the stores (default: a new directory under /tmp)\n",
      argv0);
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--quick") o.quick = true;
    else if (a == "--raw") o.raw = true;
    else if (a == "--keep") o.keep = true;
    else if (a == "--days" && (v = value())) o.shape.days = std::atoi(v);
    else if (a == "--rollup-after-hours" && (v = value())) o.shape.rollup_after_hours = std::atoi(v);
    else if (a == "--markdown" && (v = value())) o.markdown = v;
    else if (a == "--gpuledger" && (v = value())) o.gpuledger = v;
    else if (a == "--dir" && (v = value())) o.dir = v;
    else return false;
  }
  if (o.quick) o.shape.days = 1;
  return o.shape.days > 0 && o.shape.rollup_after_hours >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    usage(argv[0]);
    return 64;
  }
  if (o.gpuledger.empty()) o.gpuledger = (fs::canonical("/proc/self/exe").parent_path() / "gpuledger").string();
  bool own_dir = o.dir.empty();
  if (own_dir) {
    char tmpl[] = "/tmp/gpuledger-report-bench.XXXXXX";
    if (!::mkdtemp(tmpl)) {
      std::perror("mkdtemp");
      return 1;
    }
    o.dir = tmpl;
  }
  bool ok = true;
  std::string report = std::string("## Report on a node-month") + (o.quick ? " (--quick: one day)" : "") + "\n\n";
  try {
    report += measure_store(o, "rolled-up", o.shape, ok);
    if (o.raw) {
      NodeMonthShape raw = o.shape;
      raw.rollup_after_hours = 0;
      report += measure_store(o, "raw", raw, ok);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuledger-report-bench: %s\n", e.what());
    ok = false;
  }
  if (own_dir && !o.keep) fs::remove_all(o.dir);
  std::printf("%s", report.c_str());
  if (!o.markdown.empty()) std::ofstream(o.markdown) << report;
  return ok ? 0 : 1;
}
