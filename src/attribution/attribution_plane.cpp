#include "attribution/attribution_plane.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "identity/gpu_evidence.h"
#include "identity/process_cgroup.h"
#include <fmt/format.h>
#include "probes/map_reader.h"
#include "probes/pin_heartbeat.h"

namespace gpuledger::attribution {
namespace {

identity::CgroupMounts require_mounts(const AttributionOptions& options) {
  auto mounts = identity::discover_cgroup_mounts("/proc/self/mountinfo", "/proc/cgroups", options.v1_controller);
  if (mounts.v2.empty()) spdlog::warn("no cgroup2 mount found: workloads are keyed by the v1 fallback only");
  return mounts;
}

probes::ProbeProgramConfig program_config(const AttributionOptions& options, const identity::CgroupMounts& mounts,
                                          probes::PinStore* pins) {
  probes::ProbeProgramConfig config;
  config.pins = pins;
  if (!mounts.v2.empty()) config.cgroup_v2_root_id = identity::cgroup_id_of(mounts.v2).value_or(1);
  config.v1_subsys_index = mounts.v1_subsys_index;
  config.max_workloads = options.max_workloads;
  config.per_probe_links = options.per_probe_links;
  config.runtime_mode = probes::to_bpf_mode(options.runtime_probes);
  return config;
}

std::string joined_path(const gl_new_workload_event& ev) {
  std::string path;
  for (int i = static_cast<int>(std::min<uint32_t>(ev.depth, GL_PATH_DEPTH)) - 1; i >= 0; --i)
    path += "/" + std::string(ev.components[i], strnlen(ev.components[i], GL_NAME_LEN));
  return path.empty() ? "/" : path;
}

std::string read_comm(const std::string& proc_root, uint32_t pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

constexpr uint64_t kHoldLimitNs = 10'000'000'000ull;

uint64_t unix_now_us() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// Holding a process is safe only where the agent can continue it: a pid the
// kernel reports is a pid here only in the host's pid namespace.
bool holds_new_drivers(const AttributionOptions& options) {
  if (!options.discover || !options.hold_new_drivers) return false;
  struct stat st {};
  constexpr ino_t kInitPidNamespace = 0xEFFFFFFC;  // PROC_PID_INIT_INO
  if (::stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == kInitPidNamespace) return true;
  spdlog::warn("not in the host's pid namespace: processes mapping a new libcuda are not held (their first calls "
               "may go uncounted); run with hostPID to hold them");
  return false;
}

}  // namespace

AttributionPlane::AttributionPlane(AttributionOptions options)
    : options_(std::move(options)),
      mounts_(require_mounts(options_)),
      pins_(probes::open_pin_store(options_.bpf_pin_dir, "cuda")),
      program_(std::make_unique<probes::CudaProbeProgram>(program_config(options_, mounts_, pins_.get()))),
      directory_(mounts_, options_.classifier) {
  report_orphaned_pins();
  // Loaded even without discovery: it also tells which inode the kernel
  // probes for a named library on overlayfs (LibOpenWatcher::identify).
  try {
    // The held processes are pinned with the data plane: an agent that dies
    // holding one has its successor continue it.
    const std::string held_pin = pins_ ? probes::held_processes_pin_path(options_.bpf_pin_dir) : "";
    watcher_ = std::make_unique<probes::LibOpenWatcher>(holds_new_drivers(options_), held_pin);
    if (size_t n = watcher_->continue_held(0))
      spdlog::warn("continued {} process(es) an earlier agent held for a new libcuda and did not continue", n);
  } catch (const Error& e) {
    spdlog::warn("{}; libraries are found by the periodic scan only", e.what());
  }
  // auto starts full: every count is made until the node is judged
  // (node/probe_set_judge.h), which may then switch it to billing.
  active_set_ = options_.probe_set == probes::ProbeSet::kBilling ? probes::ProbeSet::kBilling : probes::ProbeSet::kFull;
  probe_set_reason_ = options_.probe_set == probes::ProbeSet::kAuto ? std::string(kAutoNotJudgedYet) : "configured";
  spdlog::info("probe set {} ({})", probes::probe_set_name(active_set_), probe_set_reason_);
  probes::ProbePlanOptions plan;
  plan.launch_returns = options_.launch_returns;
  plan.hot_path = active_set_ == probes::ProbeSet::kFull;
  attacher_ = std::make_unique<probes::LibraryAttacher>(*program_, plan, watcher_.get(), options_.proc_root,
                                                        options_.max_libraries);
  if (options_.runtime_probes != probes::RuntimeProbes::kOff) {
    runtime_ = std::make_unique<probes::RuntimeAttacher>(*program_, watcher_.get(), options_.proc_root,
                                                         options_.max_libraries, plan.hot_path);
    if (options_.discover)
      runtime_worker_ = std::make_unique<RuntimeDiscoveryWorker>(*runtime_, options_.proc_root,
                                                                 [this] { return attacher_->attached_files(); });
  }

  auto on_event = [](void* ctx, void* data, size_t size) {
    static_cast<AttributionPlane*>(ctx)->handle_event(data, size);
    return 0;
  };
  events_.reset(ring_buffer__new(program_->maps().events, on_event, this, nullptr));
  if (!events_) throw Error("cannot open the probe event ring buffer");
  if (watcher_ && ring_buffer__add(events_.get(), watcher_->events_fd(), on_event, this) != 0)
    throw Error("cannot open the library watcher's ring buffer");

  // Overflow counts from before the first probe (maps taken over from an
  // earlier agent) are not news; every later one is.
  map_full_log_ = std::make_unique<MapFullLog>(program_->max_workloads());
  map_full_log_->update(probes::read_stats(program_->maps().stats), std::chrono::steady_clock::now());
  for (const auto& path : options_.cuda_libs) attacher_->offer(path, "cli");
  if (runtime_)
    for (const auto& path : options_.runtime_libs)
      if (!runtime_->offer(path)) spdlog::warn("--cuda-runtime-lib {}: no CUDA runtime entry points found to probe", path);
  if (options_.discover) {
    for (const auto& path : probes::default_driver_library_paths()) attacher_->offer(path, "host");
    const auto started = std::chrono::steady_clock::now();
    scan_for_libraries();
    spdlog::info("first scan of executable mappings: {} files judged not to be the CUDA driver, {} attached, in {} ms",
                 attacher_->files_judged(), attacher_->attached().size(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                     .count());
  }
  // So were the runtime files of the processes using it, at once rather than
  // by the background worker: their pinned probes are taken over, not dropped.
  if (runtime_worker_ && pins_) runtime_worker_->scan_all_now();
  // Every driver and runtime file in use was offered by now: pinned probes on
  // a file no one offered (no process maps it any more) are dropped.
  if (pins_) pins_->drop_unclaimed_libraries();
  relearn_live_processes();
}

void AttributionPlane::report_orphaned_pins() {
  if (!pins_ || !options_.pins_heartbeat_age || *options_.pins_heartbeat_age <= options_.orphaned_pins_after) return;
  pins_orphaned_seconds_ = options_.pins_heartbeat_age->count();
  spdlog::warn("BPF pins: the data plane pinned in {} had no agent for {} h {} min (longer than "
               "--orphaned-pins-after): its probes trapped every CUDA call on this node meanwhile and nobody read "
               "them. Taken over now; if gpuledger is not meant to run here, stop it and run `gpuledger uninstall`",
               options_.bpf_pin_dir, pins_orphaned_seconds_ / 3600, pins_orphaned_seconds_ % 3600 / 60);
}

void AttributionPlane::relearn_live_processes() {
  // The kernel side announced these processes to an earlier agent; their
  // GPU views name the devices of contexts created before this one started.
  for (const auto& [pid, st] : probes::read_processes(program_->maps().processes)) learn_gpu_view(pid, st.cgroup_key);
}

AttributionPlane::~AttributionPlane() {
  stop();
  if (watcher_) watcher_->stop_holding();
  // Reports still queued may hold stopped processes: handle them now, so
  // every held process is continued before the agent goes.
  if (events_) ring_buffer__consume(events_.get());
  if (watcher_) watcher_->continue_held(0);
}

void AttributionPlane::start() {
  if (running_.exchange(true)) return;
  thread_ = std::thread([this] { run(); });
}

void AttributionPlane::stop() {
  if (!running_.exchange(false)) return;
  if (thread_.joinable()) thread_.join();
}

std::string AttributionPlane::counter_set_id() const {
  if (!pins_) return "";
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(program_->maps().workload_counters, &info, &len) != 0) return "";
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return fmt::format("{}/{}", boot, info.id);
}

std::string AttributionPlane::call_name(uint32_t call_id) const {
  if (call_id >= GL_RUNTIME_CALL_BASE && runtime_)
    if (auto name = runtime_->call_name(call_id)) return *name;
  return attacher_->call_name(call_id);
}

void AttributionPlane::run() {
  using clock = std::chrono::steady_clock;
  auto next_scan = clock::now() + options_.scan_interval;
  auto next_gc = clock::now() + options_.gc_interval;
  auto next_stats = clock::now();
  while (running_) {
    loop_beat_ns_ = clock::now().time_since_epoch().count();
    if (watcher_) watcher_->heartbeat();  // holding is allowed while this loop runs
    if (!map_read_) {  // readiness means counters can be read, scraped or not
      std::lock_guard lock(refresh_mu_);
      refresh_locked();
    }
    // Wakes on the first event (a library is covered within milliseconds of
    // being mapped); the timeout only paces the heartbeat (fresh for 2 s in
    // bpf/lib_discovery.bpf.c) and the retries: 4 turns a second at idle.
    ring_buffer__poll(events_.get(), 250);
    auto now = clock::now();
    attacher_->retry_incomplete(now);
    if (runtime_) runtime_->retry_incomplete(now);
    if (options_.discover && now >= next_scan) {
      scan_for_libraries();
      attacher_->recheck_named_paths();
      next_scan = now + options_.scan_interval;
    }
    if (now >= next_stats) {  // a full map is logged, not only counted
      map_full_log_->update(probes::read_stats(program_->maps().stats), now);
      // A held process whose report never came through is not left stopped.
      if (watcher_)
        if (size_t n = watcher_->continue_held(kHoldLimitNs))
          spdlog::warn("continued {} process(es) held for a new libcuda longer than 10 s", n);
      if (pins_) probes::beat_pins_heartbeat(options_.bpf_pin_dir);  // the pins have an agent (pin_heartbeat.h)
      next_stats = now + std::chrono::seconds(1);
    }
    if (now >= next_gc) {
      retire_gone_workloads();
      forget_retired_workloads(now);
      next_gc = now + options_.gc_interval;
    }
  }
}

void AttributionPlane::scan_for_libraries() {
  const auto scanned = probes::scan_process_maps(options_.proc_root);
  for (const auto& candidate : scanned) attacher_->offer(candidate);
  attacher_->detach_unused(scanned);
  if (runtime_) runtime_->detach_unused(scanned);
  if (runtime_worker_) runtime_worker_->scan_all(scanned);
}

void AttributionPlane::handle_event(const void* data, size_t size) {
  if (size < sizeof(gl_event_header)) return;
  const auto* h = static_cast<const gl_event_header*>(data);
  switch (h->type) {
    case GL_EV_NEW_WORKLOAD:
      if (size >= sizeof(gl_new_workload_event)) {
        const auto& ev = *static_cast<const gl_new_workload_event*>(data);
        if (!ev.truncated) directory_.learn(h->cgroup_key, joined_path(ev));
        spdlog::debug("new workload key {} path {}", h->cgroup_key, joined_path(ev));
      }
      break;
    case GL_EV_PROC_START:
      // Read now, while the process surely lives: its view of the GPUs names
      // the device ordinals its workload's counters are kept under.
      learn_gpu_view(h->tgid, h->cgroup_key);
      break;
    case GL_EV_PROC_EXIT:
      spdlog::debug("process {} ended its CUDA life", h->tgid);
      if (size >= sizeof(gl_proc_event)) record_exit(*static_cast<const gl_proc_event*>(data));
      break;
    case GL_EV_RUNTIME_BYPASS:
      ++runtime_bypass_processes_;
      spdlog::info("process {} reaches the CUDA driver around its exported symbols: its runtime calls are "
                   "counted by the runtime probes", h->tgid);
      break;
    case GL_EV_LIB_MAP:
      if (size < sizeof(gl_lib_map_event)) break;
      if (options_.discover) {
        handle_library_map(*static_cast<const gl_lib_map_event*>(data));
      } else if (static_cast<const gl_lib_map_event*>(data)->held) {
        release_held(h->tgid);
      }
      break;
    default:
      break;
  }
}

void AttributionPlane::release_held(uint32_t pid) {
  if (::kill(static_cast<pid_t>(pid), SIGCONT) != 0 && errno != ESRCH)
    spdlog::warn("cannot continue process {} held for its new libcuda: {}", pid, std::strerror(errno));
  if (watcher_) watcher_->released(pid);
}

void AttributionPlane::handle_library_map(const gl_lib_map_event& ev) {
  // A process held (stopped) by the watcher is continued whatever happens
  // below: probes in place, or the file judged not to need them.
  struct Continue {
    AttributionPlane* agent;
    uint32_t pid;
    ~Continue() {
      if (pid) agent->release_held(pid);
    }
  } resume{this, ev.held ? ev.h.tgid : 0u};
  if (ev.known_driver) {
    // A process taking up a driver already probed: its runtime, if any, is
    // mapped by now. Read on the runtime worker: this thread stays quick.
    if (runtime_worker_) runtime_worker_->look_at(ev.h.tgid);
    return;
  }
  const probes::FileId id{ev.file.dev, ev.file.ino};
  probes::LibraryCandidate candidate{ev.h.tgid, {}, "map", id};
  auto lines = probes::exec_mappings(options_.proc_root, ev.h.tgid, ev.start);
  if (!lines.empty()) {
    candidate.mapping = std::move(lines.front());
  } else {  // unmapped already, or the process is gone: map_files may still say
    candidate.mapping.range = fmt::format("{:x}-{:x}", ev.start, ev.end);
    candidate.mapping.start = ev.start;
    candidate.mapping.printed = id;
    candidate.mapping.path = std::string(ev.name, strnlen(ev.name, sizeof(ev.name)));
  }
  if (attacher_->offer(candidate)) {
    if (runtime_worker_) runtime_worker_->look_at(ev.h.tgid);
    return;
  }
  // Judged files are remembered by the attacher (and the watcher keeps quiet
  // about them); one that could not be opened is reported again at its next
  // mapping, by whichever process maps it.
  if (watcher_ && !attacher_->judged(id)) watcher_->forget(id);
}

void AttributionPlane::learn_gpu_view(uint32_t pid, uint64_t cgroup_key) {
  auto view = identity::read_process_gpu_view(options_.proc_root, pid);
  if (!view) return;  // gone already: keep what an earlier process said
  std::lock_guard lock(views_mu_);
  gpu_views_[cgroup_key] = std::move(*view);
}

void AttributionPlane::learn_held_gpus(const std::map<uint32_t, gl_proc_state>& processes,
                            const std::vector<identity::GpuIdentity>& inventory,
                            const std::map<probes::CounterKey, probes::Usage>& totals) {
  // Only workloads with a GPU the device side has not settled yet are looked
  // at: a node's thousands of settled processes cost nothing per snapshot.
  std::set<uint64_t> unsettled;
  {
    std::lock_guard lock(views_mu_);
    for (const auto& [key, usage] : totals)
      if (key.cgroup_key != 0 && !gpu_labels_.contains(key)) unsettled.insert(key.cgroup_key);
  }
  if (unsettled.empty()) return;
  auto nvml = options_.gpu_processes ? options_.gpu_processes() : std::map<uint32_t, std::set<std::string>>{};
  std::map<uint64_t, std::set<std::string>> seen;
  {
    std::lock_guard scans_lock(fd_scans_mu_);
    std::erase_if(fd_scans_, [&](const auto& s) { return !processes.contains(s.first); });  // exited
    for (const auto& [pid, st] : processes) {
      if (!unsettled.contains(st.cgroup_key)) continue;
      auto& held = seen[st.cgroup_key];
      FdScan& scan = fd_scans_[pid];
      for (unsigned minor : identity::read_open_gpu_minors(options_.proc_root, pid, scan.cursor))
        for (const auto& g : inventory)
          if (g.minor == minor && !g.uuid.empty()) held.insert(g.uuid);
      if (scan.cursor.truncated) {
        ++evidence_scans_truncated_;
        if (!std::exchange(scan.logged, true))
          spdlog::warn("process {} holds more than {} descriptors: its device files are read {} at a time, over "
                       "several snapshots",
                       pid, identity::kMaxFdsExamined, identity::kMaxFdsExamined);
      }
      if (auto it = nvml.find(pid); it != nvml.end()) held.insert(it->second.begin(), it->second.end());
    }
  }
  std::lock_guard lock(views_mu_);
  for (auto& [key, held] : seen)
    if (!held.empty()) held_gpus_[key].merge(held);
}

AttributionPlane::GpuLabels AttributionPlane::gpu_labels(const probes::CounterKey& key, const std::vector<identity::GpuIdentity>& inventory) {
  if (key.device == GL_DEVICE_UNKNOWN) return unknown_device_labels(key, inventory);
  std::lock_guard lock(views_mu_);
  // Once tied to a GPU by the device side, a key keeps its labels: a series
  // whose labels changed would look like a counter reset to every reader.
  // What only the environment says is asked again until the device side
  // confirms or corrects it (identity/gpu_evidence.h).
  if (auto it = gpu_labels_.find(key); it != gpu_labels_.end()) return it->second;
  std::optional<identity::GpuIdentity> hint;
  if (auto view = gpu_views_.find(key.cgroup_key); view != gpu_views_.end())
    hint = identity::resolve_ordinal(view->second, key.device, inventory);
  static const std::set<std::string> kNone;
  auto held = held_gpus_.find(key.cgroup_key);
  auto choice = identity::choose_gpu(hint, held == held_gpus_.end() ? kNone : held->second, inventory);
  if (choice.disagreed && disagreed_.insert(key).second) {
    ++gpu_disagreements_;
    spdlog::warn("workload {}: its environment names GPU {} for device ordinal {}, but its processes hold {} open "
                 "(or NVML lists them there); {}",
                 directory_.resolve(key.cgroup_key).id, hint->uuid, key.device,
                 fmt::join(held->second, ", "), choice.gpu ? "booking its calls on " + choice.gpu->uuid
                                                           : std::string("its calls stay on an unknown GPU"));
  }
  if (!choice.gpu) return {};
  GpuLabels labels{choice.gpu->index ? std::to_string(*choice.gpu->index) : "", choice.gpu->uuid, choice.source};
  // Wait for the index too when the inventory will know it. A MIG instance
  // is settled by its environment: its device files name only the parent
  // (choose_gpu), so no later scan could tell more.
  const bool mig = hint && hint->uuid.rfind("GPU-", 0) != 0;
  if ((choice.source == "device" && (!labels.gpu.empty() || inventory.empty())) || mig) gpu_labels_[key] = labels;
  return labels;
}

// Calls made where the probes saw no context tied to a device: CUDA 13's
// runtime makes its primary context current without a call the probes tie
// to one (docs/gpu-validation.md), and a process that took up CUDA before the
// agent started has its context already. When its workload's processes hold
// one GPU's device files open, or NVML lists them on one GPU only, the calls
// can only have gone there; more than one, or none, and the GPU stays unknown.
AttributionPlane::GpuLabels AttributionPlane::unknown_device_labels(const probes::CounterKey& key,
                                                                   const std::vector<identity::GpuIdentity>& inventory) {
  if (key.cgroup_key == 0) return {};  // the overflow bucket: nobody's
  std::lock_guard lock(views_mu_);
  if (auto it = gpu_labels_.find(key); it != gpu_labels_.end()) return it->second;
  auto held = held_gpus_.find(key.cgroup_key);
  if (held == held_gpus_.end() || held->second.size() != 1) return {};
  auto choice = identity::choose_gpu(std::nullopt, held->second, inventory);
  if (!choice.gpu) return {};
  GpuLabels labels{choice.gpu->index ? std::to_string(*choice.gpu->index) : "", choice.gpu->uuid, choice.source};
  if (!labels.gpu.empty() || inventory.empty()) gpu_labels_[key] = labels;
  return labels;
}

void AttributionPlane::refresh_locked() {
  auto fds = program_->maps();
  // Counters first, then the spans still open (probes/open_spans.h says why).
  auto counters = probes::read_workload_counters(fds.workload_counters);
  busy_to_date_.add(counters, probes::read_open_span_ns(fds.open_spans, probes::monotonic_now_ns()));
  totals_.absorb(counters, probes::read_call_errors(fds.call_errors), *this);
  totals_.absorb_export_tables(probes::read_export_tables(fds.export_tables));
  map_read_ = true;
}

AttributionPlane::Health AttributionPlane::health() const {
  Health h;
  if (int64_t ns = loop_beat_ns_.load(); ns != 0)
    h.last_loop = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(ns));
  h.map_read = map_read_;
  h.probes_attached = attacher_->probes_attached();
  return h;
}

void AttributionPlane::retire_gone_workloads() {
  std::lock_guard lock(refresh_mu_);
  auto fds = program_->maps();
  auto processes = probes::read_processes(fds.processes);
  probes::prune_orphan_allocations(fds.live_allocations, processes);

  probes::prune_orphan_contexts(fds.context_devices, processes);

  std::map<uint64_t, bool> has_process;
  for (const auto& [pid, st] : processes) has_process[st.cgroup_key] = true;
  auto counters = probes::read_workload_counters(fds.workload_counters);
  std::set<uint64_t> gone;
  for (const auto& [key, c] : counters)
    if (key.cgroup_key != 0 && !has_process[key.cgroup_key] && !directory_.still_exists(key.cgroup_key))
      gone.insert(key.cgroup_key);
  if (gone.empty()) return;
  // Their cgroups are removed, so nothing can count into them any more: take
  // the last reading, then drop the kernel entries.
  refresh_locked();
  auto errors = probes::read_call_errors(fds.call_errors);
  for (const auto& [key, c] : counters) {
    if (!gone.contains(key.cgroup_key)) continue;
    gl_workload_key k{key.cgroup_key, key.device, 0};
    bpf_map_delete_elem(fds.workload_counters, &k);
  }
  for (const auto& [ekey, n] : errors) {
    if (!gone.contains(ekey.where.cgroup_key)) continue;
    gl_error_key k{ekey.where.cgroup_key, ekey.call_id, ekey.where.device};
    bpf_map_delete_elem(fds.call_errors, &k);
  }
  probes::delete_export_tables(fds.export_tables, gone);
  const auto now = std::chrono::steady_clock::now();
  totals_.forget_entries(gone);
  for (uint64_t key : gone) {
    gone_since_.emplace(key, now);
    ++workloads_retired_;
  }
  std::lock_guard views_lock(views_mu_);
  for (uint64_t key : gone) {
    gpu_views_.erase(key);
    held_gpus_.erase(key);
  }
  std::erase_if(disagreed_, [&](const auto& k) { return gone.contains(k.cgroup_key); });
  std::erase_if(gpu_labels_, [&](const auto& kv) { return gone.contains(kv.first.cgroup_key); });
}

void AttributionPlane::forget_retired_workloads(std::chrono::steady_clock::time_point now) {
  std::set<uint64_t> expired;
  for (auto it = gone_since_.begin(); it != gone_since_.end();) {
    if (now - it->second < options_.retire_after) {
      ++it;
      continue;
    }
    expired.insert(it->first);
    it = gone_since_.erase(it);
  }
  if (expired.empty()) return;
  std::lock_guard lock(refresh_mu_);
  totals_.drop(expired);
  for (uint64_t key : expired) directory_.forget(key);
  spdlog::debug("{} workloads gone for over {} ms left the snapshots", expired.size(), options_.retire_after.count());
}

bool AttributionPlane::judge_infrastructure(const WorkloadView& view) {
  std::vector<uint32_t> pids;
  for (const auto& p : view.processes) pids.push_back(p.pid);
  std::lock_guard lock(infrastructure_mu_);
  // No live process is no new evidence: the last verdict stands (a gone
  // workload's last readings stay where they were).
  if (pids.empty()) {
    auto it = infrastructure_.find(view.workload.id);
    return it != infrastructure_.end() && it->second;
  }
  bool verdict = options_.infrastructure->is_infrastructure(view.workload, view.names, pids);
  infrastructure_[view.workload.id] = verdict;
  return verdict;
}

bool AttributionPlane::infrastructure_verdict(const std::string& workload_id) {
  std::lock_guard lock(infrastructure_mu_);
  auto it = infrastructure_.find(workload_id);
  return it != infrastructure_.end() && it->second;
}

void AttributionPlane::record_exit(const gl_proc_event& ev) {
  const uint64_t now_us = unix_now_us();
  // The start is the kernel's monotonic clock: its age, taken from now.
  const uint64_t age_us = (probes::monotonic_now_ns() - std::min(ev.start_ns, probes::monotonic_now_ns())) / 1000;
  const std::string id = directory_.resolve(ev.h.cgroup_key).id;
  exited_.add({ev.h.tgid, id, infrastructure_verdict(id), ev.start_ns ? now_us - std::min(age_us, now_us) : 0, now_us});
}

void AttributionPlane::add_unprobed_gpu_processes(const std::map<uint32_t, gl_proc_state>& processes,
                                                  std::vector<ProcessOwner>& out) {
  if (!options_.gpu_processes) return;
  size_t reads = 0;
  for (const auto& [pid, gpus] : options_.gpu_processes()) {
    if (processes.contains(pid)) continue;
    if (++reads > kMaxUnprobedReads) break;  // the rest stay __unattributed__
    auto cgroup = identity::read_process_cgroup(options_.proc_root, pid, options_.v1_controller);
    if (!cgroup) continue;
    const identity::Workload w = identity::classify_cgroup_path(cgroup->cgroup_path, options_.classifier);
    out.push_back({pid, w.id, infrastructure_verdict(w.id), cgroup->start_unix_us, 0});
  }
}

void AttributionPlane::set_probe_set(probes::ProbeSet set, const std::string& reason_code, const std::string& reason) {
  if (set == probes::ProbeSet::kAuto) return;
  probes::ProbeSet from;
  {
    std::lock_guard lock(probe_set_mu_);
    from = active_set_;
    if (from == set) {
      probe_set_reason_ = reason;
      return;
    }
  }
  const bool hot = set == probes::ProbeSet::kFull;
  // Attached before the set says full, detached before it says billing: a
  // count the page shows is never missing for lack of a probe.
  attacher_->set_hot_path(hot);
  if (runtime_) runtime_->set_hot_path(hot);
  size_t dropped = 0;
  if (!hot) dropped = probes::drop_open_spans(program_->maps().open_spans);
  {
    std::lock_guard lock(probe_set_mu_);
    active_set_ = set;
    probe_set_reason_ = reason;
    ++probe_set_changes_[{std::string(probes::probe_set_name(from)), std::string(probes::probe_set_name(set)),
                          reason_code}];
  }
  spdlog::info("probe set {} -> {}: {}{}", probes::probe_set_name(from), probes::probe_set_name(set), reason,
               dropped ? fmt::format(" ({} busy spans left open by unwaited launches ended)", dropped) : "");
}

probes::ProbeSet AttributionPlane::probe_set() const {
  std::lock_guard lock(probe_set_mu_);
  return active_set_;
}

std::string AttributionPlane::probe_set_reason() const {
  std::lock_guard lock(probe_set_mu_);
  return probe_set_reason_;
}

AttributionSnapshot AttributionPlane::snapshot() {
  AttributionSnapshot snap;
  std::map<uint32_t, gl_proc_state> processes;
  {
    std::lock_guard lock(refresh_mu_);
    refresh_locked();
    processes = probes::read_processes(program_->maps().processes);
  }
  auto inventory = options_.gpu_inventory ? options_.gpu_inventory() : std::vector<identity::GpuIdentity>{};
  const auto totals = totals_.totals();
  learn_held_gpus(processes, inventory, totals);
  std::map<std::string, WorkloadView> by_id;
  std::map<std::string, std::map<GpuLabels, probes::Usage>> by_gpu;
  std::map<uint64_t, std::string> id_of_key;
  for (const auto& [key, usage] : totals) {
    if (key.cgroup_key == 0 && usage == probes::Usage{}) continue;  // the overflow bucket, unused
    identity::Workload w = directory_.resolve(key.cgroup_key);
    auto& view = by_id[w.id];
    if (view.workload.id.empty()) view.workload = w;
    // A workload's cgroup has one key per device: list its path once.
    if (id_of_key.emplace(key.cgroup_key, w.id).second && !w.cgroup_path.empty())
      view.cgroup_paths.push_back(w.cgroup_path);
    view.usage += usage;
    by_gpu[w.id][gpu_labels(key, inventory)] += usage;
  }
  // A process the probes know names its workload even when that workload
  // has counted nothing yet - under the billing set, a tenant whose kernels
  // use only module globals allocates nothing: NVML's samples of its pids are
  // its bill, and must not fall to __unattributed__.
  for (const auto& [pid, st] : processes) {
    if (st.cgroup_key == 0 || id_of_key.contains(st.cgroup_key)) continue;
    identity::Workload w = directory_.resolve(st.cgroup_key);
    auto& view = by_id[w.id];
    if (view.workload.id.empty()) view.workload = w;
    id_of_key.emplace(st.cgroup_key, w.id);
    if (!w.cgroup_path.empty()) view.cgroup_paths.push_back(w.cgroup_path);
  }
  for (const auto& [pid, st] : processes) {
    auto it = id_of_key.find(st.cgroup_key);
    if (it == id_of_key.end()) continue;
    by_id[it->second].processes.push_back(
        {pid, read_comm(options_.proc_root, pid), probes::live_bytes_of(st)});
  }
  for (auto& [id, view] : by_id) {
    if (options_.namer) view.names = options_.namer->names_for(view.workload);
    if (options_.infrastructure) view.infrastructure = judge_infrastructure(view);
    for (auto& [labels, usage] : by_gpu[id]) view.by_gpu.push_back({labels.gpu, labels.uuid, usage, labels.source});
    snap.workloads.push_back(std::move(view));
  }
  if (options_.infrastructure) {  // verdicts of workloads that left the snapshots go with them
    std::lock_guard lock(infrastructure_mu_);
    std::erase_if(infrastructure_, [&](const auto& kv) { return !by_id.count(kv.first); });
  }
  snap.other_processes = exited_.recent(unix_now_us());
  add_unprobed_gpu_processes(processes, snap.other_processes);

  auto fds = program_->maps();
  SelfView& self = snap.self;
  self.probes_attached = attacher_->probes_attached() + (runtime_ ? runtime_->probes_attached() : 0);
  {
    std::lock_guard lock(probe_set_mu_);
    self.probe_set = active_set_;
    self.probe_set_reason = probe_set_reason_;
    self.probe_set_changes = probe_set_changes_;
  }
  self.probe_attach_failures = attacher_->probe_attach_failures() + (runtime_ ? runtime_->probe_attach_failures() : 0);
  if (runtime_) {
    self.runtime_libraries = runtime_->attached();
    self.runtime_libraries_detached = runtime_->libraries_detached();
    self.runtime_library_limit_rejections = runtime_->limit_rejections();
    self.runtime_libraries_incomplete = runtime_->libraries_incomplete();
    self.runtime_libraries_stripped = runtime_->stripped_runtimes();
  }
  self.runtime_bypass_processes = runtime_bypass_processes_;
  self.gpu_identity_disagreements = gpu_disagreements_;
  self.evidence_scans_truncated = evidence_scans_truncated_;
  self.libraries = attacher_->attached();
  self.rejected_libraries = attacher_->rejected();
  self.files_judged_not_driver = attacher_->files_judged();
  self.libraries_detached = attacher_->libraries_detached();
  self.library_limit_rejections = attacher_->limit_rejections();
  self.libraries_incomplete = attacher_->libraries_incomplete();
  self.kernel_stats = probes::read_stats(fds.stats);
  self.library_watcher = watcher_ && options_.discover;
  self.library_events_dropped = watcher_ ? watcher_->events_dropped() : 0;
  self.workloads_retired = workloads_retired_;
  self.exited_process_records_evicted = exited_.evicted();
  self.workloads_known = directory_.size();
  if (pins_) self.pins = pins_->report();
  self.pins.orphaned_seconds = pins_orphaned_seconds_;
  self.maps = {
      {"workload_counters", probes::count_entries(fds.workload_counters), program_->max_workloads()},
      {"call_errors", probes::count_entries(fds.call_errors), program_->max_workloads()},
      {"processes", processes.size(), 65536},
      {"export_tables", probes::count_entries(fds.export_tables), program_->max_export_tables()},
  };
  return snap;
}

}  // namespace gpuledger::attribution
