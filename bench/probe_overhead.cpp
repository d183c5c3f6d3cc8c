#include "probe_overhead.h"

#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "attribution/attribution_plane.h"
#include "cgroup_tree.h"
#include "common/error.h"
#include "cuda_runtime_sim.h"
#include "empty_probe.skel.h"
#include "private_copy.h"
#include "probes/bpf_handles.h"
#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"
#include "probes/uprobe_multi.h"
#include "report.h"
#include "sim_library.h"

namespace gpuledger::bench {
namespace {

// ------------------------------------------------------------- the calls

struct HotCall {
  const char* symbol;
  std::function<CUresult()> invoke;
  // Share of calls_per_round this call makes. A synchronisation, even one
  // with nothing to wait for, sleeps on a timer that has already expired: a
  // timer interrupt and a context switch, tens of microseconds on a VM, so it
  // gets a tenth of the calls to keep a round within seconds.
  double call_share = 1.0;
};
using HotCalls = std::vector<HotCall>;

// The simulator's calls, all of which succeed: launch, copy, synchronise.
HotCalls simulator_calls(const CudaSession& session) {
  return {{"cuLaunchKernel", [&session] { return session.launch(); }},
          {"cuMemcpyHtoD_v2", [&session] { return session.copy(); }},
          {"cuMemcpyHtoDAsync_v2", [&session] { return session.copy_async(); }},
          {"cuStreamSynchronize", [&session] { return session.sync(); }, 0.1}};
}

size_t calls_for(const HotCall& call, const ProbeOverheadOptions& options) {
  return static_cast<size_t>(static_cast<double>(options.calls_per_round) * call.call_share);
}

// Nanoseconds per call over `n` back-to-back calls. A short warm-up first, so
// the first hit of a freshly attached probe (page faults, a new map entry, the
// agent's new-workload event) is not part of the timing. Every timed call
// must return what the first warm-up call did: success on the simulator, the
// same fast failure on the real driver without a GPU.
double ns_per_call(const HotCall& call, size_t n) {
  const CUresult expected = call.invoke();
  for (size_t i = 0; i < 1000; ++i) call.invoke();
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i)
    if (call.invoke() != expected) throw Error(std::string(call.symbol) + " changed its result mid-run");
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
  virtual size_t probe_count() const { return 0; }
};

class NoProbe : public Attachment {};

// gl_empty, loaded for one kind of link: a program linked as a multi-uprobe
// must be loaded with that expected attach type.
struct EmptyProgram {
  empty_probe* skel = nullptr;
  explicit EmptyProgram(bool multi) {
    skel = empty_probe__open();
    if (skel && multi)
      bpf_program__set_expected_attach_type(skel->progs.gl_empty, static_cast<bpf_attach_type>(probes::kAttachUprobeMulti));
    if (!skel || empty_probe__load(skel) != 0) throw Error("cannot load the empty probe (BPF unavailable?)");
  }
  ~EmptyProgram() { empty_probe__destroy(skel); }
  bpf_program* prog() const { return skel->progs.gl_empty; }
};

// The floor: gl_empty at the same file offsets the agent probes, linked the
// way the agent links: one multi-uprobe link for all offsets (entries, and
// another for returns), or one perf-event link per offset through
// bpf_program__attach_uprobe_opts.
class EmptyProbes : public Attachment {
 public:
  EmptyProbes(const EmptyProgram& program, bool multi, const std::string& path, const std::vector<uint64_t>& offsets,
              bool with_return) {
    for (bool retprobe : {false, true}) {
      if (retprobe && !with_return) break;
      if (multi)
        attach_multi(program, path, offsets, retprobe);
      else
        for (uint64_t offset : offsets) attach_one(program, path, offset, retprobe);
    }
    probes_ = offsets.size() * (with_return ? 2 : 1);
  }
  size_t probe_count() const override { return probes_; }

 private:
  void attach_multi(const EmptyProgram& program, const std::string& path, const std::vector<uint64_t>& offsets,
                    bool retprobe) {
    int fd = probes::link_uprobe_multi(bpf_program__fd(program.prog()), path, offsets, {}, retprobe);
    if (fd < 0) throw Error("cannot link the empty multi-uprobe to " + path + ": " + std::strerror(-fd));
    multi_links_.emplace_back(fd);
  }
  void attach_one(const EmptyProgram& program, const std::string& path, uint64_t offset, bool retprobe) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe);
    bpf_link* link = bpf_program__attach_uprobe_opts(program.prog(), -1, path.c_str(), offset, &opts);
    if (!link) throw Error("cannot attach the empty uprobe to " + path);
    links_.emplace_back(link);
  }
  struct Fd {
    int fd;
    explicit Fd(int f) : fd(f) {}
    Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  };
  std::vector<Fd> multi_links_;
  std::vector<probes::LinkHandle> links_;
  size_t probes_ = 0;
};

// The real thing, in this process: load, attach to the private library, start.
class AgentProbes : public Attachment {
 public:
  AgentProbes(const std::string& path, bool launch_returns, bool per_probe_links, probes::ProbeSet set)
      : billing_(set == probes::ProbeSet::kBilling) {
    attribution::AttributionOptions options;
    options.cuda_libs = {path};
    options.discover = false;
    options.launch_returns = launch_returns;
    options.probe_set = set;
    options.per_probe_links = per_probe_links;
    agent_ = std::make_unique<attribution::AttributionPlane>(options);
    agent_->start();
    auto self = agent_->snapshot().self;
    if (self.probes_attached == 0 || self.probe_attach_failures != 0)
      throw Error("the agent did not attach cleanly to " + path);
    probes_ = self.probes_attached;
  }
  // Launches counted, or - on the real driver without a GPU, where every
  // launch fails and --launch-returns counts it as an error - launch errors.
  // The billing set must count none: no probe is there.
  std::string check(uint64_t launches_made) override {
    uint64_t counted = 0;
    for (const auto& w : agent_->snapshot().workloads) {
      counted += w.usage.counters.launches;
      for (const auto& [call, n] : w.usage.errors_by_call)
        if (call.starts_with("cuLaunchKernel")) counted += n;
    }
    if (billing_) return counted == 0 ? "" : "the billing set counted " + std::to_string(counted) + " launches";
    if (counted >= launches_made) return "";
    return "agent counted " + std::to_string(counted) + " of " + std::to_string(launches_made) + " launches";
  }
  size_t probe_count() const override { return probes_; }

 private:
  std::unique_ptr<attribution::AttributionPlane> agent_;
  size_t probes_ = 0;
  bool billing_ = false;
};

// ----------------------------------------------------- configurations

// One thing to measure. Floors and agents come in both link kinds; an agent
// row is compared with the floor of its own link kind and probe shape.
struct Configuration {
  enum class Kind { kNone, kFloor, kAgent } kind;
  const char* label;
  bool multi_link = false;      // multi-uprobe links, else one perf-event link per probe
  bool with_return = false;     // floors: the uretprobe too
  bool launch_returns = false;  // agents: --launch-returns
  probes::ProbeSet probe_set = probes::ProbeSet::kFull;  // agents: --probe-set
};

std::vector<Configuration> configurations(bool multi_supported) {
  using K = Configuration::Kind;
  std::vector<Configuration> all = {
      {K::kNone, "(a) no probe"},
      {K::kFloor, "(b) empty uprobe, multi-uprobe link", true, false},
      {K::kFloor, "(b') empty uprobe + uretprobe, multi-uprobe links", true, true},
      {K::kAgent, "(c) gpuledger agent", true, false, false},
      {K::kAgent, "(d) agent --launch-returns", true, false, true},
      {K::kFloor, "(e) empty uprobe, perf-event link", false, false},
      {K::kFloor, "(e') empty uprobe + uretprobe, perf-event links", false, true},
      {K::kAgent, "(f) agent --per-probe-links", false, false, false},
      // No probe on these calls at all: compared with the entry floor (b), of which it should add nothing.
      {K::kAgent, "(g) agent --probe-set billing", true, false, false, probes::ProbeSet::kBilling},
  };
  // Without multi-uprobe links (Linux < 6.6) the agent falls back to
  // perf-event links by itself: (c) and (d) are then measured against (e).
  if (!multi_supported)
    for (auto& c : all)
      if (c.kind != K::kNone) c.multi_link = false;
  return all;
}

std::unique_ptr<Attachment> attach(const Configuration& c, const EmptyProgram& multi_empty,
                                   const EmptyProgram& perf_empty, const std::string& path,
                                   const std::vector<uint64_t>& offsets) {
  switch (c.kind) {
    case Configuration::Kind::kFloor:
      return std::make_unique<EmptyProbes>(c.multi_link ? multi_empty : perf_empty, c.multi_link, path, offsets,
                                           c.with_return);
    case Configuration::Kind::kAgent:
      return std::make_unique<AgentProbes>(path, c.launch_returns, !c.multi_link, c.probe_set);
    case Configuration::Kind::kNone:
      break;
  }
  return std::make_unique<NoProbe>();
}

bool uprobe_multi_supported(const EmptyProgram& multi_empty, const std::string& path, uint64_t offset) {
  int fd = probes::link_uprobe_multi(bpf_program__fd(multi_empty.prog()), path, {offset}, {}, false);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// How the agent probes each call: entry only, or entry + return. Read from
// its own probe plan rather than assumed.
class ProbeShapes {
 public:
  explicit ProbeShapes(const std::vector<probes::ElfFunction>& functions) {
    for (bool launch_returns : {false, true}) {
      probes::CallNames names;
      for (const auto& spec : probes::plan_probes(functions, names, {.launch_returns = launch_returns}))
        with_return_[{spec.name, launch_returns}] = spec.with_return;
    }
  }
  bool with_return(const std::string& symbol, bool launch_returns) const {
    auto it = with_return_.find({symbol, launch_returns});
    return it != with_return_.end() && it->second;
  }

 private:
  std::map<std::pair<std::string, bool>, bool> with_return_;
};

// The floor an agent configuration is compared with, for one call.
size_t matching_floor(const std::vector<Configuration>& all, size_t agent, const ProbeShapes& shapes,
                      const std::string& symbol) {
  // The billing set probes none of these calls: its floor is the cheapest probe, (b).
  bool with_return = all[agent].probe_set == probes::ProbeSet::kFull && shapes.with_return(symbol, all[agent].launch_returns);
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].kind == Configuration::Kind::kFloor && all[i].multi_link == all[agent].multi_link &&
        all[i].with_return == with_return)
      return i;
  throw Error("no floor to compare with");
}

uint64_t offset_of(const std::vector<probes::ElfFunction>& functions, const std::string& name) {
  for (const auto& fn : functions)
    if (fn.name == name && fn.is_default_version) return fn.file_offset;
  throw Error("the library has no " + name);
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

// ns/call figures, one per round, for every configuration (by index) and call.
class Measurements {
 public:
  void add(size_t config, const std::string& symbol, double ns) { samples_[config][symbol].push_back(ns); }
  const std::vector<double>& of(size_t config, const std::string& symbol) const {
    return samples_.at(config).at(symbol);
  }

  // What a configuration adds to a call: taken round by round (minus the
  // no-probe figure of the same round, configuration 0), then the median,
  // which is steadier than a difference of medians when the machine drifts.
  double added(size_t config, const std::string& symbol) const {
    const auto& base = of(0, symbol);
    const auto& with = of(config, symbol);
    std::vector<double> diffs;
    for (size_t i = 0; i < base.size() && i < with.size(); ++i) diffs.push_back(with[i] - base[i]);
    return median(diffs);
  }

 private:
  std::map<size_t, std::map<std::string, std::vector<double>>> samples_;
};

std::string label_letter(const Configuration& c) {
  std::string label = c.label;
  return label.substr(0, label.find(')') + 1);
}

// One row per call and configuration; agent rows carry their ratio to the
// floor of the same link kind and probe shape.
MarkdownTable overhead_table(const Measurements& m, const ProbeShapes& shapes, const std::vector<Configuration>& all,
                             const HotCalls& calls, const ProbeOverheadOptions& options) {
  MarkdownTable table({"Call", "Calls/round", "Configuration", "Probes", "ns/call (median)", "min-max",
                       "added ns vs (a)", "added / matching floor's added"});
  for (const auto& call : calls) {
    for (size_t i = 0; i < all.size(); ++i) {
      const Configuration& c = all[i];
      const auto& v = m.of(i, call.symbol);
      auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      std::string probes = "-", added_ns = "-", vs_floor = "-";
      if (c.kind != Configuration::Kind::kNone) added_ns = fixed(m.added(i, call.symbol), 1);
      if (c.kind == Configuration::Kind::kFloor) probes = c.with_return ? "entry+return" : "entry";
      if (c.kind == Configuration::Kind::kAgent) {
        probes = c.probe_set == probes::ProbeSet::kBilling              ? "none"
                 : shapes.with_return(call.symbol, c.launch_returns) ? "entry+return"
                                                                     : "entry";
        size_t floor = matching_floor(all, i, shapes, call.symbol);
        vs_floor = ratio(m.added(i, call.symbol), m.added(floor, call.symbol));
        if (vs_floor != "-") vs_floor += " of " + label_letter(all[floor]);
      }
      table.add_row({call.symbol, std::to_string(calls_for(call, options)), c.label, probes, fixed(median(v), 1),
                     fixed(*lo, 1) + "-" + fixed(*hi, 1), added_ns, vs_floor});
    }
  }
  return table;
}

// An unprobed call is tens of nanoseconds, a probed one most of a
// microsecond or more: a no-probe figure that jumps by that much means
// something else attached a probe to the library during the run, and that
// round is not to be trusted. (Smaller wobbles are ordinary VM noise.)
std::string baseline_warnings(const Measurements& m, const HotCalls& calls) {
  std::string out;
  for (const auto& call : calls) {
    const auto& v = m.of(0, call.symbol);
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    if (*hi > 5 * *lo && *hi - *lo > 300)
      out += std::string("\nWARNING: ") + call.symbol + " without probes ranged " + fixed(*lo, 1) + "-" +
             fixed(*hi, 1) + " ns over the rounds: something else probed the library (or loaded the machine) "
             "during the run; rerun on a quiet machine.\n";
  }
  return out;
}

// Every configuration against `calls` into the library at `path`, rounds
// interleaved; returns the table and reading aids (after the caller's heading).
std::string measure_calls(const std::string& path, const HotCalls& calls, const BenchCgroups& cgroups,
                          const std::string& cgroup_name, const ProbeOverheadOptions& options) {
  // A non-root cgroup v2: the agent's normal path (the root takes the v1 fallback).
  BenchCgroups::move_self_to(cgroups.make(cgroup_name));
  PinnedToOneCpu pinned;

  auto functions = probes::read_dynamic_functions(path);
  ProbeShapes shapes(functions);
  std::vector<uint64_t> offsets;
  for (const auto& call : calls) offsets.push_back(offset_of(functions, call.symbol));

  EmptyProgram multi_empty(true), perf_empty(false);
  const bool multi = uprobe_multi_supported(multi_empty, path, offsets.front());
  const auto all = configurations(multi);

  // Rounds are the outer loop, so slow drift on the machine (other work on a
  // 2-vCPU VM) spreads over every configuration alike.
  Measurements measurements;
  std::vector<std::string> warnings;
  std::vector<std::vector<double>> detach_seconds(all.size());  // not part of the figures, but worth knowing
  std::vector<size_t> probe_counts(all.size());
  for (int round = 0; round < options.rounds; ++round) {
    progress("probe overhead: round %d/%d", round + 1, options.rounds);
    for (size_t i = 0; i < all.size(); ++i) {
      auto started = std::chrono::steady_clock::now();
      auto attached = attach(all[i], multi_empty, perf_empty, path, offsets);
      for (const auto& call : calls) measurements.add(i, call.symbol, ns_per_call(call, calls_for(call, options)));
      // Each agent configuration is a fresh agent: it saw the warm-up and the timed launches.
      if (auto w = attached->check(1000 + options.calls_per_round); !w.empty())
        warnings.push_back(all[i].label + (": " + w));
      probe_counts[i] = attached->probe_count();
      auto detaching = std::chrono::steady_clock::now();
      attached.reset();
      std::chrono::duration<double> took = detaching - started, detach = std::chrono::steady_clock::now() - detaching;
      detach_seconds[i].push_back(detach.count());
      progress("  %-50s %5.1f s attached, %5.1f s to detach", all[i].label, took.count(), detach.count());
    }
  }
  BenchCgroups::move_self_to(cgroups.mount());

  std::string out = "Rounds: " + std::to_string(options.rounds) +
         ", each timing every call under every configuration in turn; medians over rounds. The calling "
         "thread is pinned to one CPU, in a non-root cgroup v2 (" + cgroups.parent() + "/" + cgroup_name +
         "). Multi-uprobe links: " + (multi ? "available" : "not available (Linux < 6.6?)") +
         ". The goal is an agent whose added cost is within 10% of the matching floor's (ratio <= 1.10x), and "
         "under --probe-set billing (g), which probes none of these calls, at most 2% of the floor's (ratio <= "
         "0.02x: no trap at all).\n\n";
  out += overhead_table(measurements, shapes, all, calls, options).render();
  out += "\nDetaching, median over rounds (not in the figures above):\n\n";
  for (size_t i = 1; i < all.size(); ++i)
    out += std::string("- ") + all[i].label + ": " + std::to_string(probe_counts[i]) + " probes, " +
           fixed(median(detach_seconds[i]), 2) + " s\n";
  for (const auto& w : warnings) out += "\nWARNING: " + w + "\n";
  out += baseline_warnings(measurements, calls);
  return out;
}

// NVIDIA's real driver library, from a private copy (not named libcuda.so*,
// for the reason sim_library.h gives), loaded with dlopen. Without a GPU its
// cuInit fails (CUDA_ERROR_NO_DEVICE) and every call after fails fast: what is
// timed is the call path through the real code and the probes on it.
class RealDriver {
 public:
  explicit RealDriver(const std::string& original) : lib_(original, "gpuledger-bench-nvidia-driver.so") {
    resolve("cuInit", init_);
    resolve("cuLaunchKernel", launch_);
    resolve("cuMemcpyHtoD_v2", copy_);
    resolve("cuMemcpyHtoDAsync_v2", copy_async_);
    resolve("cuStreamSynchronize", sync_);
    init_result_ = init_(0);
  }
  const std::string& path() const { return lib_.path(); }
  CUresult init_result() const { return init_result_; }
  HotCalls calls() const {
    return {{"cuLaunchKernel", [this] { return launch_(nullptr, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr); }},
            {"cuMemcpyHtoD_v2", [this] { return copy_(0x1000, host_, sizeof host_); }},
            {"cuMemcpyHtoDAsync_v2", [this] { return copy_async_(0x1000, host_, sizeof host_, nullptr); }},
            {"cuStreamSynchronize", [this] { return sync_(nullptr); }}};
  }

 private:
  template <typename Fn>
  void resolve(const char* name, Fn& out) {
    out = reinterpret_cast<Fn>(lib_.symbol(name));
  }
  PrivateCopy lib_;
  CUresult (*init_)(unsigned) = nullptr;
  decltype(&::cuLaunchKernel) launch_ = nullptr;
  decltype(&::cuMemcpyHtoD_v2) copy_ = nullptr;
  decltype(&::cuMemcpyHtoDAsync_v2) copy_async_ = nullptr;
  decltype(&::cuStreamSynchronize) sync_ = nullptr;
  CUresult init_result_ = CUDA_SUCCESS;
  char host_[4096] = {};
};

// A launch-bound tenant: one thread launching `n` kernels back to back,
// doing `work_ns` of its own work (a spin) after each, paced at
// `per_second` launches a second when given (0: as fast as it can). Returns
// the launches it achieved per second.
double launches_per_second(const CudaSession& session, size_t n, uint64_t work_ns, double per_second) {
  for (size_t i = 0; i < 1000; ++i) session.launch();
  const auto start = std::chrono::steady_clock::now();
  const auto period = per_second > 0 ? std::chrono::nanoseconds(static_cast<int64_t>(1e9 / per_second))
                                     : std::chrono::nanoseconds(0);
  auto next = start;
  for (size_t i = 0; i < n; ++i) {
    if (session.launch() != CUDA_SUCCESS) throw Error("cuLaunchKernel failed mid-run");
    const auto done = std::chrono::steady_clock::now() + std::chrono::nanoseconds(work_ns);
    while (std::chrono::steady_clock::now() < done) {
    }
    next += period;
    while (per_second > 0 && std::chrono::steady_clock::now() < next) {
    }
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  return static_cast<double>(n) / took.count();
}

}  // namespace

std::string measure_tenant_throughput(const SimLibrary& lib, const BenchCgroups& cgroups,
                                      const ProbeOverheadOptions& options) {
  BenchCgroups::move_self_to(cgroups.make("tenant-throughput"));
  PinnedToOneCpu pinned;
  CudaSession session(lib.api());
  using K = Configuration::Kind;
  const std::vector<Configuration> all = {{K::kNone, "no agent"},
                                          {K::kAgent, "agent --probe-set billing", true, false, false,
                                           probes::ProbeSet::kBilling},
                                          {K::kAgent, "agent --probe-set full", true, false, false}};
  struct Shape {
    std::string name;
    uint64_t work_ns;
    double per_second;
  };
  const std::vector<Shape> shapes = {{"flat out (no work between launches)", 0, 0},
                                     {"paced at 100,000 launches/s, 2 us of work each", 2000, 100000}};
  const EmptyProgram multi_empty(true), perf_empty(false);
  std::map<std::pair<size_t, size_t>, std::vector<double>> rates;  // (shape, configuration) -> per round
  for (int round = 0; round < options.rounds; ++round) {
    progress("tenant throughput: round %d/%d", round + 1, options.rounds);
    for (size_t c = 0; c < all.size(); ++c) {
      auto attached = attach(all[c], multi_empty, perf_empty, lib.path(), {});
      for (size_t s = 0; s < shapes.size(); ++s)
        rates[{s, c}].push_back(
            launches_per_second(session, options.calls_per_round, shapes[s].work_ns, shapes[s].per_second));
    }
  }
  BenchCgroups::move_self_to(cgroups.mount());
  MarkdownTable table({"Tenant", "Configuration", "launches/s (median)", "min-max", "of no agent's"});
  for (size_t s = 0; s < shapes.size(); ++s)
    for (size_t c = 0; c < all.size(); ++c) {
      const auto& v = rates[{s, c}];
      auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      table.add_row({shapes[s].name, all[c].label, fixed(median(v), 0), fixed(*lo, 0) + "-" + fixed(*hi, 0),
                     fixed(100 * median(v) / median(rates[{s, 0}]), 1) + " %"});
    }
  return "## 1t. A launch-bound tenant's throughput\n\n"
         "One thread launching " + std::to_string(options.calls_per_round) + " kernels per round on the simulator "
         "(pinned to one CPU, in a non-root cgroup v2), " + std::to_string(options.rounds) +
         " rounds, configurations interleaved; medians over rounds. Goal: under --probe-set billing the "
         "tenant launches as fast as with no agent (within noise).\n\n" +
         table.render();
}

std::string measure_probe_overhead(const SimLibrary& lib, const BenchCgroups& cgroups,
                                   const ProbeOverheadOptions& options) {
  CudaSession session(lib.api());
  return "## 1. Added cost per CUDA call\n\n" +
         measure_calls(lib.path(), simulator_calls(session), cgroups, "probe-overhead", options);
}

std::string measure_real_driver_overhead(const std::string& real_libcuda, const BenchCgroups& cgroups,
                                         const ProbeOverheadOptions& options) {
  RealDriver driver(real_libcuda);
  return "## 1n. Added cost per call on NVIDIA's real driver library\n\n"
         "Library: a private copy of " + real_libcuda + " (Debian's libcuda1, no GPU: cuInit returned " +
         std::to_string(driver.init_result()) + ", and each call below fails fast, so the timing is the "
         "real library's call path plus the probes). The agent's return probes count each failure as an "
         "error by entry point: that path is part of the figures.\n\n" +
         measure_calls(driver.path(), driver.calls(), cgroups, "real-driver-overhead", options);
}


// ------------------------------------------------- part 1b: the runtime path

namespace {

// The runtime stand-in, from a private copy like the driver's. Its first call
// dlopens "libcuda.so.1": the private driver copy already loaded carries that
// SONAME, so the loader hands back that one, not the build tree's file.
struct RuntimeApp {
  using set_device_fn = int (*)(int);
  using malloc_fn = int (*)(void**, size_t);
  using launch_fn = int (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  using memcpy_fn = int (*)(void*, const void*, size_t, cudaMemcpyKind);
  PrivateCopy lib;
  const std::string& path;
  launch_fn launch = nullptr;
  memcpy_fn memcpy = nullptr;
  void* buffer = nullptr;
  char host[4096] = {};

  explicit RuntimeApp(const std::string& original) : lib(original, "gpuledger-bench-cudart.so"), path(lib.path()) {
    auto set_device = reinterpret_cast<set_device_fn>(lib.symbol("cudaSetDevice"));
    auto alloc = reinterpret_cast<malloc_fn>(lib.symbol("cudaMalloc"));
    launch = reinterpret_cast<launch_fn>(lib.symbol("cudaLaunchKernel"));
    memcpy = reinterpret_cast<memcpy_fn>(lib.symbol("cudaMemcpy"));
    if (set_device(0) != 0 || alloc(&buffer, sizeof host) != 0) throw Error("the runtime stand-in failed to start");
  }
};

void runtime_kernel_stub() {}

struct RuntimeCall {
  const char* symbol;          // the runtime entry point
  const char* driver_symbol;   // what it calls in the driver
  bool driver_return;          // the agent's driver probe has a return probe
  std::function<int(const RuntimeApp&)> invoke;
};

const std::vector<RuntimeCall>& runtime_calls() {
  static const std::vector<RuntimeCall> calls = {
      {"cudaLaunchKernel", "cuLaunchKernel", false,
       [](const RuntimeApp& a) {
         return a.launch(reinterpret_cast<const void*>(&runtime_kernel_stub), dim3{1, 1, 1}, dim3{32, 1, 1},
                         nullptr, 0, nullptr);
       }},
      {"cudaMemcpy", "cuMemcpyHtoD_v2", true,
       [](const RuntimeApp& a) {
         return a.memcpy(a.buffer, a.host, sizeof a.host, cudaMemcpyHostToDevice);
       }},
  };
  return calls;
}

double ns_per_runtime_call(const RuntimeApp& app, const RuntimeCall& call, size_t n) {
  for (size_t i = 0; i < 1000; ++i) call.invoke(app);
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i)
    if (call.invoke(app) != 0) throw Error(std::string(call.symbol) + " failed");
  std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / static_cast<double>(n);
}

// The floor of the runtime path: empty probes where the agent puts its own,
// entry and return on the runtime call, and the driver probes' shape beneath.
class RuntimeFloor : public Attachment {
 public:
  RuntimeFloor(const EmptyProgram& program, bool multi, const std::string& runtime, uint64_t runtime_offset,
               const std::string& driver, uint64_t driver_offset, bool driver_return)
      : runtime_(program, multi, runtime, {runtime_offset}, true),
        driver_(program, multi, driver, {driver_offset}, driver_return) {}
  size_t probe_count() const override { return runtime_.probe_count() + driver_.probe_count(); }

 private:
  EmptyProbes runtime_, driver_;
};

class RuntimeAgent : public Attachment {
 public:
  RuntimeAgent(const std::string& driver, const std::string& runtime, probes::RuntimeProbes mode) {
    attribution::AttributionOptions options;
    options.cuda_libs = {driver};
    options.discover = false;
    options.runtime_probes = mode;
    options.runtime_libs = {runtime};
    agent_ = std::make_unique<attribution::AttributionPlane>(options);
    agent_->start();
    auto self = agent_->snapshot().self;
    if (self.probe_attach_failures != 0 || (mode != probes::RuntimeProbes::kOff) != !self.runtime_libraries.empty())
      throw Error("the agent did not attach cleanly to the runtime stand-in");
  }
  std::string check(uint64_t launches_made) override {
    uint64_t counted = 0;
    for (const auto& w : agent_->snapshot().workloads) counted += w.usage.counters.launches;
    if (counted >= launches_made) return "";
    return "agent counted " + std::to_string(counted) + " of " + std::to_string(launches_made) + " launches";
  }

 private:
  std::unique_ptr<attribution::AttributionPlane> agent_;
};

}  // namespace

std::string measure_runtime_overhead(const SimLibrary& lib, const BenchCgroups& cgroups, const std::string& cudart,
                                     const ProbeOverheadOptions& options) {
  BenchCgroups::move_self_to(cgroups.make("runtime-overhead"));
  PinnedToOneCpu pinned;
  CudaSession driver_session(lib.api());  // the simulator's settings (no simulated time), and cuInit
  RuntimeApp app(cudart);

  auto driver_functions = probes::read_dynamic_functions(lib.path());
  auto runtime_functions = probes::read_dynamic_functions(app.path);
  EmptyProgram multi_empty(true), perf_empty(false);
  const bool multi = uprobe_multi_supported(multi_empty, lib.path(), driver_functions.front().file_offset);
  const EmptyProgram& empty = multi ? multi_empty : perf_empty;

  struct Config {
    const char* label;
    std::function<std::unique_ptr<Attachment>(const RuntimeCall&)> attach;
  };
  const std::vector<Config> configs = {
      {"(a) no probe", [](const RuntimeCall&) { return std::make_unique<NoProbe>(); }},
      {"(b) floor: empty runtime entry+return, driver probes' shape",
       [&](const RuntimeCall& c) -> std::unique_ptr<Attachment> {
         return std::make_unique<RuntimeFloor>(empty, multi, app.path, offset_of(runtime_functions, c.symbol),
                                               lib.path(), offset_of(driver_functions, c.driver_symbol),
                                               c.driver_return);
       }},
      {"(c) agent --runtime-probes off",
       [&](const RuntimeCall&) { return std::make_unique<RuntimeAgent>(lib.path(), app.path, probes::RuntimeProbes::kOff); }},
      {"(d) agent --runtime-probes auto",
       [&](const RuntimeCall&) { return std::make_unique<RuntimeAgent>(lib.path(), app.path, probes::RuntimeProbes::kAuto); }},
      {"(e) agent --runtime-probes on",
       [&](const RuntimeCall&) { return std::make_unique<RuntimeAgent>(lib.path(), app.path, probes::RuntimeProbes::kOn); }},
  };

  // samples[config][call] = ns/call per round
  std::vector<std::map<std::string, std::vector<double>>> samples(configs.size());
  std::vector<std::string> warnings;
  for (int round = 0; round < options.rounds; ++round) {
    progress("runtime path: round %d/%d", round + 1, options.rounds);
    for (const auto& call : runtime_calls()) {
      for (size_t i = 0; i < configs.size(); ++i) {
        auto attached = configs[i].attach(call);
        samples[i][call.symbol].push_back(ns_per_runtime_call(app, call, options.calls_per_round));
        if (call.driver_return) continue;  // launches only: the agent's check counts launches
        if (auto w = attached->check(1000 + options.calls_per_round); !w.empty() && i >= 2)
          warnings.push_back(configs[i].label + (": " + w));
      }
    }
  }
  BenchCgroups::move_self_to(cgroups.mount());

  auto added = [&](size_t i, const std::string& symbol) {
    std::vector<double> diffs;
    for (size_t r = 0; r < samples[0][symbol].size(); ++r) diffs.push_back(samples[i][symbol][r] - samples[0][symbol][r]);
    return median(diffs);
  };
  MarkdownTable table({"Runtime call", "Calls/round", "Configuration", "ns/call (median)", "added ns vs (a)",
                       "added / (b)'s added"});
  for (const auto& call : runtime_calls()) {
    for (size_t i = 0; i < configs.size(); ++i) {
      std::string add = i ? fixed(added(i, call.symbol), 1) : "-";
      std::string vs = i >= 3 ? ratio(added(i, call.symbol), added(1, call.symbol)) : "-";
      table.add_row({call.symbol, std::to_string(options.calls_per_round), configs[i].label,
                     fixed(median(samples[i][call.symbol]), 1), add, vs});
    }
  }
  std::string out = "## 1b. Added cost per CUDA runtime call (--runtime-probes)\n\n";
  out += "The runtime stand-in (a private copy of " + cudart + ") calling a private copy of the driver "
         "simulator, through its exported symbols: every call is seen at both levels. Rounds: " +
         std::to_string(options.rounds) + ", medians over rounds, calling thread pinned to one CPU. The floor (b) "
         "is empty probes at the same places the agent's auto/on probes go: entry and return of the runtime call, "
         "and the driver probe beneath it (launch: entry; copy: entry and return). Multi-uprobe links: " +
         std::string(multi ? "available" : "not available") + ".\n\n";
  out += table.render();
  for (const auto& w : warnings) out += "\nWARNING: " + w + "\n";
  return out;
}

}  // namespace gpuledger::bench
