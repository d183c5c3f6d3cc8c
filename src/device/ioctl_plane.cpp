#include "device/ioctl_plane.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/counter_delta.h"
#include "common/error.h"
#include "common/log.h"
#include "identity/cgroup_fs.h"
#include "identity/workload_directory.h"
#include "nvidia_ioctl.skel.h"
#include "nvidia_ioctl.h"
#include "probes/bpf_handles.h"
#include "probes/map_reader.h"
#include "probes/pin_store.h"

namespace gpuledger::device {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int possible_cpus() {
  static const int n = libbpf_num_possible_cpus();
  return n > 0 ? n : 1;
}

}  // namespace

void IoctlTotalsFolder::absorb(const std::map<IoctlKey, IoctlTotals>& reading) {
  std::lock_guard lock(mu_);
  for (const auto& [key, now] : reading) {
    IoctlTotals& last = last_[key];
    IoctlTotals& total = totals_[key];
    // An entry re-created since the last reading counts from 0 (common/counter_delta.h).
    total.calls += counter_delta(last.calls, now.calls).delta;
    total.ns += counter_delta(last.ns, now.ns).delta;
    last = now;
  }
}

void IoctlTotalsFolder::forget_entry(const IoctlKey& key) {
  std::lock_guard lock(mu_);
  last_.erase(key);
}

std::map<IoctlKey, IoctlTotals> IoctlTotalsFolder::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

IoctlPlane::IoctlPlane(IoctlPlaneOptions options) : options_(std::move(options)) {
  devices_ = options_.devices.empty() ? default_ioctl_devices(read_text(options_.proc_devices)) : options_.devices;
  resolve_ = options_.resolve_workload;
  identity::CgroupMounts mounts;
  if (options_.cgroup_v2_mount.empty() || !resolve_) mounts = identity::discover_cgroup_mounts();
  if (options_.cgroup_v2_mount.empty()) options_.cgroup_v2_mount = mounts.v2;
  if (!resolve_) {
    own_directory_ = std::make_shared<identity::WorkloadDirectory>(mounts, options_.classifier);
    resolve_ = [directory = own_directory_](uint64_t id) { return directory->resolve(id); };
  }

  probes::route_libbpf_logging();
  auto fail = [&](const std::string& why) {
    error_ = why;
    if (skel_) nvidia_ioctl__destroy(skel_);
    skel_ = nullptr;
    pins_.reset();
    spdlog::warn("nvidia ioctl plane off: {} (gpuledger_nvidia_ioctl_plane_up 0)", why);
  };
  skel_ = nvidia_ioctl__open();
  if (!skel_) {
    fail(std::string("cannot open the ioctl program: ") + std::strerror(errno));
    return;
  }
  bpf_map__set_max_entries(skel_->maps.ioctl_counters, std::max<uint32_t>(options_.max_entries, 1));
  try {
    pins_ = probes::open_pin_store(options_.bpf_pin_dir, "nvidia_ioctl");
    if (pins_) pins_->reuse_maps(skel_->obj);
  } catch (const Error& e) {
    fail(e.what());
    return;
  }
  if (int err = nvidia_ioctl__load(skel_); err) {
    fail(std::string("cannot load the ioctl program: ") + std::strerror(-err));
    return;
  }
  try {
    if (pins_) {
      size_t size = 0;
      const void* elf = nvidia_ioctl__elf_bytes(&size);
      pins_->pin_maps(skel_->obj, probes::pin_links_version(elf, size, ""));
      pins_adopted_ = pins_->report().adopted;
    }
    set_device_filter();
  } catch (const Error& e) {
    fail(e.what());
    return;
  }
  if (int err = nvidia_ioctl__attach(skel_); err) {
    fail(std::string("cannot attach the ioctl program (raw tracepoints sys_enter/sys_exit): ") +
         std::strerror(-err));
    return;
  }
  // Attached before the earlier agent's links are unpinned: no call goes
  // unseen (the exit handler run twice finds the call gone the second time).
  if (pins_) {
    pins_->pin_link("sys_enter", bpf_link__fd(skel_->links.gl_ioctl_enter));
    pins_->pin_link("sys_exit", bpf_link__fd(skel_->links.gl_ioctl_exit));
  }
  std::string traced;
  for (const auto& d : devices_)
    traced += (traced.empty() ? "" : ", ") + std::to_string(d.major) + ":" +
              (d.minor ? std::to_string(*d.minor) : std::string("*")) + " (" + std::string(to_string(d.kind)) + ")";
  spdlog::info("nvidia ioctl plane: tracing ioctls on devices {}", traced);
}

IoctlPlane::~IoctlPlane() {
  if (skel_) nvidia_ioctl__destroy(skel_);
}

void IoctlPlane::set_device_filter() {
  const int fd = bpf_map__fd(skel_->maps.ioctl_devices);
  std::set<std::pair<uint32_t, uint32_t>> wanted;
  for (const auto& d : devices_) {
    gl_ioctl_filter_key key{d.major, d.minor.value_or(GL_IOCTL_ANY_MINOR)};
    gl_ioctl_filter_value value{d.escape_is_full_request() ? GL_IOCTL_ESCAPE_FULL : GL_IOCTL_ESCAPE_NR, 0};
    if (bpf_map_update_elem(fd, &key, &value, BPF_ANY) != 0)
      throw Error(std::string("cannot set the device filter: ") + std::strerror(errno));
    wanted.insert({key.major, key.minor});
  }
  for (const auto& k : probes::map_keys<gl_ioctl_filter_key>(fd))
    if (!wanted.contains({k.major, k.minor})) bpf_map_delete_elem(fd, &k);
}

IoctlDeviceKind IoctlPlane::kind_of(uint32_t major, uint32_t minor) const {
  for (const auto& d : devices_)
    if (d.major == major && d.minor == minor) return d.kind;
  for (const auto& d : devices_)
    if (d.major == major && !d.minor) return d.kind;
  return IoctlDeviceKind::kOther;
}

// A thread that died inside a traced ioctl never reaches sys_exit: drop its
// in-flight entry so the map does not fill with the dead.
void IoctlPlane::prune_inflight() const {
  const int fd = bpf_map__fd(skel_->maps.ioctl_inflight);
  for (uint64_t id : probes::map_keys<uint64_t>(fd)) {
    const uint32_t tgid = id >> 32, tid = static_cast<uint32_t>(id);
    std::error_code ec;
    if (!std::filesystem::exists(options_.proc_root + "/" + std::to_string(tgid) + "/task/" + std::to_string(tid), ec))
      bpf_map_delete_elem(fd, &id);
  }
}

std::map<IoctlKey, IoctlTotals> IoctlPlane::refresh() const {
  if (!skel_) return folder_.totals();
  std::lock_guard lock(refresh_mu_);
  const int fd = bpf_map__fd(skel_->maps.ioctl_counters);
  std::map<IoctlKey, IoctlTotals> reading;
  std::vector<gl_ioctl_value> per_cpu(possible_cpus());
  for (const auto& k : probes::map_keys<gl_ioctl_key>(fd)) {
    if (bpf_map_lookup_elem(fd, &k, per_cpu.data()) != 0) continue;
    IoctlTotals sum;
    for (const auto& v : per_cpu) {
      sum.calls += v.calls;
      sum.ns += v.ns;
    }
    reading[IoctlKey{k.cgroup_id, k.major, k.minor, k.escape}] = sum;
  }
  folder_.absorb(reading);
  const auto now = std::chrono::steady_clock::now();
  if (now >= next_prune_) {
    prune_inflight();
    retire_gone_cgroups(reading);
    next_prune_ = now + options_.gc_interval;
  }
  return folder_.totals();
}

// A cgroup id is never reused, so a cgroup that is gone makes no more calls:
// its entries can be deleted right after their last reading without losing a
// count, and the map does not fill with workloads long finished.
void IoctlPlane::retire_gone_cgroups(const std::map<IoctlKey, IoctlTotals>& reading) const {
  if (options_.cgroup_v2_mount.empty()) return;
  const int fd = bpf_map__fd(skel_->maps.ioctl_counters);
  std::map<uint64_t, bool> gone;
  for (const auto& [key, t] : reading) {
    if (key.cgroup_id == 0) continue;  // the overflow bucket
    auto [it, fresh] = gone.try_emplace(key.cgroup_id, false);
    if (fresh) {
      const identity::Workload w = resolve_(key.cgroup_id);
      const std::string dir = options_.cgroup_v2_mount + (w.cgroup_path == "/" ? "" : w.cgroup_path);
      it->second = w.cgroup_path.empty() || identity::cgroup_id_of(dir) != key.cgroup_id;
    }
    if (!it->second) continue;
    if (own_directory_) own_directory_->forget(key.cgroup_id);  // names of live cgroups only
    gl_ioctl_key k{key.cgroup_id, key.major, key.minor, key.escape, 0};
    bpf_map_delete_elem(fd, &k);
    folder_.forget_entry(key);
  }
}

size_t IoctlPlane::kernel_entries(std::optional<uint64_t> cgroup_id) const {
  if (!skel_) return 0;
  const int fd = bpf_map__fd(skel_->maps.ioctl_counters);
  size_t n = 0;
  for (const auto& k : probes::map_keys<gl_ioctl_key>(fd))
    if (!cgroup_id || k.cgroup_id == *cgroup_id) ++n;
  return n;
}

std::map<std::string, uint64_t> IoctlPlane::dropped() const {
  std::map<std::string, uint64_t> out{{"inflight_map_full", 0}, {"counter_map_full", 0}, {"dropped", 0}};
  if (!skel_) return out;
  const int fd = bpf_map__fd(skel_->maps.ioctl_stats);
  std::vector<uint64_t> per_cpu(possible_cpus());
  auto sum = [&](uint32_t index) {
    uint64_t total = 0;
    if (bpf_map_lookup_elem(fd, &index, per_cpu.data()) == 0)
      for (uint64_t v : per_cpu) total += v;
    return total;
  };
  out["inflight_map_full"] = sum(GL_IOCTL_STAT_INFLIGHT_FULL);
  out["counter_map_full"] = sum(GL_IOCTL_STAT_COUNTERS_FULL);
  out["dropped"] = sum(GL_IOCTL_STAT_DROPPED);
  return out;
}

void IoctlPlane::write_metrics(metrics::ExpositionWriter& out) const {
  using metrics::Labels;
  using metrics::MetricType;
  const auto totals = refresh();
  std::map<uint64_t, std::pair<identity::Workload, identity::WorkloadNames>> named;
  std::vector<std::pair<Labels, IoctlTotals>> rows;
  for (const auto& [key, t] : totals) {
    auto it = named.find(key.cgroup_id);
    if (it == named.end()) {
      identity::Workload w = resolve_(key.cgroup_id);
      identity::WorkloadNames names = options_.namer ? options_.namer->names_for(w) : identity::WorkloadNames{};
      it = named.emplace(key.cgroup_id, std::make_pair(std::move(w), std::move(names))).first;
    }
    const auto& [w, names] = it->second;
    const IoctlDeviceKind kind = kind_of(key.major, key.minor);
    rows.push_back({Labels{{"workload", w.id},
                           {"pod_uid", w.pod_uid},
                           {"container_id", w.container_id},
                           {"namespace", names.namespace_name},
                           {"pod", names.pod},
                           {"container", names.container},
                           {"team", names.team},
                           {"device", ioctl_device_label(kind, key.major, key.minor)},
                           {"minor", std::to_string(key.minor)},
                           {"escape", ioctl_escape_name(kind, key.escape)}},
                    t});
  }
  out.family("gpuledger_nvidia_ioctls_total", MetricType::kCounter,
             "ioctl(2) calls into the NVIDIA kernel driver, per workload, device file and escape.");
  for (const auto& [labels, t] : rows) out.sample(labels, t.calls);
  out.family("gpuledger_nvidia_ioctl_seconds_total", MetricType::kCounter,
             "Time spent in ioctl(2) calls into the NVIDIA kernel driver (entry to return).");
  for (const auto& [labels, t] : rows) out.sample(labels, static_cast<double>(t.ns) / 1e9);
  out.family("gpuledger_nvidia_ioctl_plane_up", MetricType::kGauge,
             "1 when the NVIDIA ioctl tracing program is loaded and attached.");
  out.sample({}, static_cast<uint64_t>(up() ? 1 : 0));
  if (pins_) {
    out.family("gpuledger_nvidia_ioctl_pins_adopted", MetricType::kGauge,
               "1 when the ioctl plane took over the maps an earlier agent pinned (its counters continue), 0 "
               "when it made them anew.");
    out.sample({}, static_cast<uint64_t>(pins_adopted_ ? 1 : 0));
  }
  out.family("gpuledger_nvidia_ioctl_dropped_total", MetricType::kCounter,
             "ioctl calls the kernel side could not count normally, by reason (counter_map_full: counted "
             "under the overflow workload).");
  for (const auto& [reason, n] : dropped()) out.sample({{"reason", reason}}, n);
}

}  // namespace gpuledger::device
