#include "probe_overhead.h"

#include <bpf/libbpf.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "agent/agent.h"
#include "cgroup_tree.h"
#include "common/error.h"
#include "empty_probe.skel.h"
#include "probes/bpf_handles.h"
#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"
#include "report.h"
#include "sim_library.h"

namespace gpuledger::bench {
namespace {

// ------------------------------------------------------------- the calls

struct HotCall {
  const char* symbol;
  CUresult (CudaSession::*invoke)() const;
  // Share of calls_per_round this call makes. A synchronisation, even one
  // with nothing to wait for, sleeps on a timer that has already expired: a
  // timer interrupt and a context switch, tens of microseconds on a VM, so it
  // gets a tenth of the calls to keep a round within seconds.
  double call_share = 1.0;
};

const std::vector<HotCall>& hot_calls() {
  static const std::vector<HotCall> calls = {
      {"cuLaunchKernel", &CudaSession::launch},
      {"cuMemcpyHtoD_v2", &CudaSession::copy},
      {"cuStreamSynchronize", &CudaSession::sync, 0.1},
  };
  return calls;
}

size_t calls_for(const HotCall& call, const ProbeOverheadOptions& options) {
  return static_cast<size_t>(static_cast<double>(options.calls_per_round) * call.call_share);
}

// Nanoseconds per call over `n` back-to-back calls. A short warm-up first, so
// the first hit of a freshly attached probe (page faults, a new map entry, the
// agent's new-workload event) is not part of the timing.
double ns_per_call(const CudaSession& session, const HotCall& call, size_t n) {
  for (size_t i = 0; i < 1000; ++i) (session.*call.invoke)();
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i)
    if ((session.*call.invoke)() != CUDA_SUCCESS) throw Error(std::string(call.symbol) + " failed");
  std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / static_cast<double>(n);
}

// --------------------------------------------------- what gets attached

// Whatever is attached while a configuration is measured; detached when destroyed.
class Attachment {
 public:
  virtual ~Attachment() = default;
  // After the timing: a warning when the probes evidently did not do their job.
  virtual std::string check(uint64_t /*launches_made*/) { return ""; }
};

class NoProbe : public Attachment {};

// The floor: gl_empty at the same file offsets the agent uses, through the
// same libbpf call (a perf-event uprobe per address, pid -1).
class EmptyProbes : public Attachment {
 public:
  EmptyProbes(bpf_program* prog, const std::string& path, const std::vector<uint64_t>& offsets, bool with_return) {
    for (uint64_t offset : offsets) {
      attach(prog, path, offset, false);
      if (with_return) attach(prog, path, offset, true);
    }
  }

 private:
  void attach(bpf_program* prog, const std::string& path, uint64_t offset, bool retprobe) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe);
    bpf_link* link = bpf_program__attach_uprobe_opts(prog, -1, path.c_str(), offset, &opts);
    if (!link) throw Error("cannot attach the empty uprobe to " + path);
    links_.emplace_back(link);
  }
  std::vector<probes::LinkHandle> links_;
};

// The real thing, in this process: load, attach to the private library, start.
class AgentProbes : public Attachment {
 public:
  AgentProbes(const std::string& path, bool launch_returns) {
    agent::AgentOptions options;
    options.cuda_libs = {path};
    options.discover = false;
    options.launch_returns = launch_returns;
    agent_ = std::make_unique<agent::Agent>(options);
    agent_->start();
    auto self = agent_->snapshot().self;
    if (self.probes_attached == 0 || self.probe_attach_failures != 0)
      throw Error("the agent did not attach cleanly to " + path);
  }
  std::string check(uint64_t launches_made) override {
    uint64_t counted = 0;
    for (const auto& w : agent_->snapshot().workloads) counted += w.usage.counters.launches;
    if (counted >= launches_made) return "";
    return "agent counted " + std::to_string(counted) + " of " + std::to_string(launches_made) + " launches";
  }

 private:
  std::unique_ptr<agent::Agent> agent_;
};

// ----------------------------------------------------- configurations

enum class Config { kNone, kFloor, kFloorPair, kAgent, kAgentLaunchReturns };

struct Configuration {
  Config id;
  const char* label;
  std::function<std::unique_ptr<Attachment>()> attach;
};

struct EmptySkeleton {
  empty_probe* skel = empty_probe__open_and_load();
  ~EmptySkeleton() { empty_probe__destroy(skel); }
};

// Which floor a gpuledger configuration is compared with, call by call: the
// empty probe shaped like the agent's own (entry only, or entry + return),
// read from the agent's probe plan rather than assumed.
class ProbeShapes {
 public:
  explicit ProbeShapes(const std::vector<probes::ElfFunction>& functions) {
    for (bool launch_returns : {false, true}) {
      probes::CallNames names;
      for (const auto& spec : probes::plan_probes(functions, names, {.launch_returns = launch_returns}))
        with_return_[{spec.name, launch_returns}] = spec.with_return;
    }
  }
  bool with_return(const std::string& symbol, Config config) const {
    auto it = with_return_.find({symbol, config == Config::kAgentLaunchReturns});
    return it != with_return_.end() && it->second;
  }
  Config floor_for(const std::string& symbol, Config config) const {
    return with_return(symbol, config) ? Config::kFloorPair : Config::kFloor;
  }

 private:
  std::map<std::pair<std::string, bool>, bool> with_return_;
};

uint64_t offset_of(const std::vector<probes::ElfFunction>& functions, const std::string& name) {
  for (const auto& fn : functions)
    if (fn.name == name && fn.is_default_version) return fn.file_offset;
  throw Error("the simulator has no " + name);
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Keeps the measuring thread on one CPU for the duration: on a 2-vCPU VM a
// migration in the middle of a run is a visible step in ns/call.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    sched_getaffinity(0, sizeof(saved_), &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  ~PinnedToOneCpu() { sched_setaffinity(0, sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_;
};

std::string shape_text(bool with_return) { return with_return ? "entry+return" : "entry"; }

// ns/call figures, one per round, for every configuration and call.
class Measurements {
 public:
  void add(Config c, const std::string& symbol, double ns) { samples_[c][symbol].push_back(ns); }
  const std::vector<double>& of(Config c, const std::string& symbol) const { return samples_.at(c).at(symbol); }

  // What the configuration adds to a call: taken round by round (minus the
  // no-probe figure of the same round), then the median, which is steadier
  // than a difference of medians when the machine drifts.
  double added(Config c, const std::string& symbol) const {
    const auto& base = of(Config::kNone, symbol);
    const auto& with = of(c, symbol);
    std::vector<double> diffs;
    for (size_t i = 0; i < base.size() && i < with.size(); ++i) diffs.push_back(with[i] - base[i]);
    return median(diffs);
  }

 private:
  std::map<Config, std::map<std::string, std::vector<double>>> samples_;
};

bool is_floor(Config c) { return c == Config::kFloor || c == Config::kFloorPair; }
bool is_agent(Config c) { return c == Config::kAgent || c == Config::kAgentLaunchReturns; }

// One row per call and configuration; agent rows carry their ratio to the
// floor of the same shape.
MarkdownTable overhead_table(const Measurements& m, const ProbeShapes& shapes,
                             const std::vector<Configuration>& configurations, const ProbeOverheadOptions& options) {
  MarkdownTable table({"Call", "Calls/round", "Configuration", "Probes", "ns/call (median)", "min-max",
                       "added ns vs (a)", "added / matching floor's added"});
  for (const auto& call : hot_calls()) {
    for (const auto& config : configurations) {
      const auto& v = m.of(config.id, call.symbol);
      auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      std::string probes = "-", added_ns = "-", vs_floor = "-";
      if (config.id != Config::kNone) added_ns = fixed(m.added(config.id, call.symbol), 1);
      if (is_floor(config.id)) probes = shape_text(config.id == Config::kFloorPair);
      if (is_agent(config.id)) {
        probes = shape_text(shapes.with_return(call.symbol, config.id));
        Config floor = shapes.floor_for(call.symbol, config.id);
        vs_floor = ratio(m.added(config.id, call.symbol), m.added(floor, call.symbol)) +
                   (floor == Config::kFloorPair ? " of (b')" : " of (b)");
      }
      table.add_row({call.symbol, std::to_string(calls_for(call, options)), config.label, probes,
                     fixed(median(v), 1), fixed(*lo, 1) + "-" + fixed(*hi, 1), added_ns, vs_floor});
    }
  }
  return table;
}

}  // namespace

std::string measure_probe_overhead(const SimLibrary& lib, const BenchCgroups& cgroups,
                                   const ProbeOverheadOptions& options) {
  // A non-root cgroup v2: the agent's normal path (the root takes the v1 fallback).
  BenchCgroups::move_self_to(cgroups.make("probe-overhead"));
  PinnedToOneCpu pinned;

  CudaSession session(lib.api());
  auto functions = probes::read_dynamic_functions(lib.path());
  ProbeShapes shapes(functions);
  std::vector<uint64_t> offsets;
  for (const auto& call : hot_calls()) offsets.push_back(offset_of(functions, call.symbol));

  EmptySkeleton empty;
  if (!empty.skel) throw Error("cannot load the empty probe (BPF unavailable?)");
  const std::string path = lib.path();
  const std::vector<Configuration> configurations = {
      {Config::kNone, "(a) no probe", [] { return std::make_unique<NoProbe>(); }},
      {Config::kFloor, "(b) empty uprobe (floor)",
       [&] { return std::make_unique<EmptyProbes>(empty.skel->progs.gl_empty, path, offsets, false); }},
      {Config::kFloorPair, "(b') empty uprobe + uretprobe (floor)",
       [&] { return std::make_unique<EmptyProbes>(empty.skel->progs.gl_empty, path, offsets, true); }},
      {Config::kAgent, "(c) gpuledger agent", [&] { return std::make_unique<AgentProbes>(path, false); }},
      {Config::kAgentLaunchReturns, "(d) agent, --launch-returns",
       [&] { return std::make_unique<AgentProbes>(path, true); }},
  };

  // Rounds are the outer loop, so slow drift on the machine (other work on a
  // 2-vCPU VM) spreads over every configuration alike.
  Measurements measurements;
  std::vector<std::string> warnings;
  std::map<Config, std::vector<double>> detach_seconds;  // not part of the figures, but worth knowing
  for (int round = 0; round < options.rounds; ++round) {
    progress("probe overhead: round %d/%d", round + 1, options.rounds);
    for (const auto& config : configurations) {
      auto started = std::chrono::steady_clock::now();
      auto attached = config.attach();
      for (const auto& call : hot_calls())
        measurements.add(config.id, call.symbol, ns_per_call(session, call, calls_for(call, options)));
      // Each agent configuration is a fresh agent: it saw the warm-up and the timed launches.
      if (auto w = attached->check(1000 + options.calls_per_round); !w.empty())
        warnings.push_back(config.label + (": " + w));
      auto detaching = std::chrono::steady_clock::now();
      attached.reset();
      std::chrono::duration<double> took = detaching - started, detach = std::chrono::steady_clock::now() - detaching;
      detach_seconds[config.id].push_back(detach.count());
      progress("  %-40s %5.1f s attached, %5.1f s to detach", config.label, took.count(), detach.count());
    }
  }
  BenchCgroups::move_self_to(cgroups.mount());

  std::string out = "## 1. Added cost per CUDA call\n\n";
  out += "Rounds: " + std::to_string(options.rounds) +
         ", each timing every call under every configuration in turn; medians over rounds. The calling "
         "thread is pinned to one CPU, in a non-root cgroup v2 (" + cgroups.parent() +
         "/probe-overhead). The goal is an agent whose added cost is within 10% of the matching floor's "
         "(ratio <= 1.10x).\n\n";
  out += overhead_table(measurements, shapes, configurations, options).render();
  out += "\nDetaching (median over rounds): empty uprobes " + fixed(median(detach_seconds[Config::kFloor]), 2) +
         " s for " + std::to_string(offsets.size()) + " probes; the agent " +
         fixed(median(detach_seconds[Config::kAgent]), 1) + " s, with --launch-returns " +
         fixed(median(detach_seconds[Config::kAgentLaunchReturns]), 1) + " s.\n";
  for (const auto& w : warnings) out += "\nWARNING: " + w + "\n";
  return out;
}

}  // namespace gpuledger::bench
