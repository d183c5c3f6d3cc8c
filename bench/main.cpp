// gpuledger-bench: what gpuledger costs, in one run.
//   1. ns added to a CUDA call by the agent's probes, against an empty uprobe (the floor)
//   2. the agent process's CPU while a tenant launches flat out
//   3. the agent process's memory with many workloads
// Prints a markdown report; --markdown FILE writes it too.
#include <sys/utsname.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent_footprint.h"
#include "cgroup_tree.h"
#include "common/error.h"
#include "common/log.h"
#include "probe_overhead.h"
#include "sim_library.h"

namespace {

namespace fs = std::filesystem;
using namespace gpuledger::bench;

struct Options {
  bool quick = false;
  std::string parts;  // which measurements to run (default: 1r23, and n where the real driver is fetched)
  std::string markdown;
  std::string agent_binary;
  std::string cuda_lib;
  std::string cudart;
  std::string real_libcuda = GPULEDGER_REAL_LIBCUDA;  // NVIDIA's libcuda, fetched by scripts/fetch-nvidia-libs.sh
};

// Full mode is what docs/performance.md reports; --quick is a smoke test
// (a few seconds) that exercises every path with smaller counts.
struct Sizes {
  ProbeOverheadOptions probe;
  int cpu_seconds;
  int workloads;
};
Sizes sizes_for(bool quick) {
  if (quick) return {{.rounds = 1, .calls_per_round = 5000}, 1, 200};
  return {{.rounds = 5, .calls_per_round = 200000}, 5, 10000};
}

void usage(const char* argv0) {
  std::printf(
      "usage: %s [--quick] [--part 1nr23] [--markdown FILE] [--agent PATH] [--cuda-lib PATH] [--real-libcuda PATH]\n"
      "  --quick          small counts, for CI smoke runs (~20 s on a 2-vCPU VM, most of it\n"
      "                   detaching the --per-probe-links agent)\n"
      "  --part DIGITS    run only these parts: 1 probe overhead, 2 agent CPU, 3 agent memory,\n"
      "                   r the runtime path (--runtime-probes), n part 1 on NVIDIA's real libcuda,\n"
      "                   t a launch-bound tenant's throughput under no agent, billing and full\n"
      "                   (default parts: 1tr23, and n when the real library is there)\n"
      "  --markdown FILE  also write the report to FILE\n"
      "  --agent PATH     the gpuledger binary (default: next to this one)\n"
      "  --cuda-lib PATH  the CUDA driver simulator (default: sim/lib/libcuda.so.1 next to this one)\n"
      "  --real-libcuda PATH  NVIDIA's driver library for part n (default: the one setup fetched)\n"
      "Must run as root (BPF, cgroups).\n",
      argv0);
}

bool parse(int argc, char** argv, Options& o) {
  fs::path here = fs::canonical("/proc/self/exe").parent_path();
  o.agent_binary = (here / "gpuledger").string();
  o.cuda_lib = (here / "sim/lib/libcuda.so.1").string();
  o.cudart = (here / "sim/lib/libcudart.so.12").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (a == "--quick") o.quick = true;
    else if (a == "--markdown") { if (!value(o.markdown)) return false; }
    else if (a == "--part") { if (!value(o.parts)) return false; }
    else if (a == "--agent") { if (!value(o.agent_binary)) return false; }
    else if (a == "--cuda-lib") { if (!value(o.cuda_lib)) return false; }
    else if (a == "--real-libcuda") { if (!value(o.real_libcuda)) return false; }
    else return false;
  }
  if (o.parts.empty()) o.parts = !o.real_libcuda.empty() && fs::exists(o.real_libcuda) ? "1tnr23" : "1tr23";
  return true;
}

std::string first_line_with(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// The 1-minute load average: other work on a 2-vCPU machine shows in every figure.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

std::string machine_section(const Options& o) {
  utsname u{};
  ::uname(&u);
  return std::string("# gpuledger-bench") + (o.quick ? " (--quick: smoke-test counts, not for reporting)" : "") +
         "\n\nMachine: " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs (" +
         first_line_with("/proc/cpuinfo", "model name") + "), kernel " + u.release +
         ", load average at start " + load_average() + ". Library: a private copy of " + o.cuda_lib +
         " (the CUDA driver simulator; no GPU).\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    usage(argv[0]);
    return 0;
  }
  if (!parse(argc, argv, options)) {
    usage(argv[0]);
    return 64;
  }
  if (::geteuid() != 0) {
    std::fprintf(stderr, "gpuledger-bench must run as root: it loads BPF programs and creates cgroups "
                         "(try: sudo %s)\n", argv[0]);
    return 1;
  }
  gpuledger::log::set_level("warn");
  // A closed pipe on the other end of stderr (`| head`) must not kill the run
  // before it has removed its cgroups and its copy of the library.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    Sizes sizes = sizes_for(options.quick);
    SimLibrary lib(options.cuda_lib);
    BenchCgroups cgroups;  // removed, all of it, when main leaves (exception or not)
    std::string report = machine_section(options);
    auto wanted = [&](char part) { return options.parts.find(part) != std::string::npos; };
    if (wanted('1')) report += "\n" + measure_probe_overhead(lib, cgroups, sizes.probe);
    if (wanted('t')) report += "\n" + measure_tenant_throughput(lib, cgroups, sizes.probe);
    if (wanted('n')) report += "\n" + measure_real_driver_overhead(options.real_libcuda, cgroups, sizes.probe);
    if (wanted('r')) report += "\n" + measure_runtime_overhead(lib, cgroups, options.cudart, sizes.probe);
    if (wanted('2')) report += "\n" + measure_agent_cpu(lib, cgroups, options.agent_binary, sizes.cpu_seconds);
    if (wanted('3')) report += "\n" + measure_agent_memory(lib, cgroups, options.agent_binary, sizes.workloads);
    std::printf("%s", report.c_str());
    if (!options.markdown.empty()) {
      std::ofstream out(options.markdown);
      out << report;
      if (!out) throw gpuledger::Error("cannot write " + options.markdown);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuledger-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
