#pragma once
// The NVIDIA driver ioctl plane: how often each workload calls into the
// NVIDIA kernel driver, on which device file and with which escape, and how
// long those calls take (bpf/nvidia_ioctl.bpf.c, BTF raw tracepoints on
// sys_enter/sys_exit, filtered in the kernel to the configured devices).
// Payloads are opaque: counted, never decoded.
//
// Exported families (via MetricsContributor):
//   gpuledger_nvidia_ioctls_total{workload,pod_uid,container_id,namespace,pod,
//                                 container,team,device,minor,escape}
//   gpuledger_nvidia_ioctl_seconds_total{same labels}
//   gpuledger_nvidia_ioctl_plane_up, gpuledger_nvidia_ioctl_dropped_total{reason}
// namespace/pod/container/team are empty when no WorkloadNamer is given (or it
// knows nothing of the workload), exactly as on the attribution families.
//
// Workloads are cgroup v2 ids (bpf_get_current_cgroup_id): on a cgroup v1-only
// host every call lands on the v2 root ("cgroup/").
//
// When the program cannot be loaded (not root, no BTF, verifier) the plane
// stays up without it: it logs why once and exports
// gpuledger_nvidia_ioctl_plane_up 0.
#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device/ioctl_names.h"
#include "identity/workload.h"
#include "identity/workload_classifier.h"
#include "identity/workload_directory.h"
#include "identity/workload_names.h"
#include "metrics/metrics_contributor.h"

struct nvidia_ioctl;
namespace gpuledger::probes {
class PinStore;
}

namespace gpuledger::device {

struct IoctlPlaneOptions {
  // The device files to trace; empty: default_ioctl_devices() of proc_devices.
  std::vector<IoctlDeviceFilter> devices;
  std::string proc_devices = "/proc/devices";
  std::string proc_root = "/proc";
  uint32_t max_entries = 16384;  // (workload, device, escape) combinations in the kernel map
  // Names a cgroup v2 id (the agent's identity::WorkloadDirectory::resolve);
  // empty: the plane keeps its own directory over the discovered cgroup mounts.
  std::function<identity::Workload(uint64_t cgroup_id)> resolve_workload;
  std::shared_ptr<const identity::WorkloadNamer> namer;
  identity::ClassifierOptions classifier;  // for its own directory (see identity/workload_classifier.h)
  // How often the kernel maps are swept: counter entries of cgroups that are
  // gone are deleted (their totals stay), in-flight entries of dead threads too.
  std::chrono::milliseconds gc_interval{60000};
  std::string cgroup_v2_mount;  // empty: discovered
  // The agent's --bpf-pin-dir: the maps and tracepoint links are pinned under
  // <dir>/nvidia_ioctl so a restart takes them over (probes/pin_store.h);
  // empty: nothing pinned.
  std::string bpf_pin_dir;
};

// One (workload, device, escape) combination's totals since the plane started.
struct IoctlKey {
  uint64_t cgroup_id = 0;
  uint32_t major = 0;
  uint32_t minor = 0;
  uint32_t escape = 0;
  auto operator<=>(const IoctlKey&) const = default;
};
struct IoctlTotals {
  uint64_t calls = 0;
  uint64_t ns = 0;
  bool operator==(const IoctlTotals&) const = default;
};

// Folds readings of the kernel map (monotonic while an entry lives; an entry
// may be deleted and re-created) into totals that never go backwards.
class IoctlTotalsFolder {
 public:
  void absorb(const std::map<IoctlKey, IoctlTotals>& reading);
  void forget_entry(const IoctlKey& key);  // deleted from the map after its last reading
  std::map<IoctlKey, IoctlTotals> totals() const;

 private:
  mutable std::mutex mu_;
  std::map<IoctlKey, IoctlTotals> totals_, last_;
};

class IoctlPlane : public metrics::MetricsContributor {
 public:
  explicit IoctlPlane(IoctlPlaneOptions options);  // never throws for BPF trouble: see up()
  ~IoctlPlane() override;
  IoctlPlane(const IoctlPlane&) = delete;
  IoctlPlane& operator=(const IoctlPlane&) = delete;

  bool up() const { return skel_ != nullptr; }
  bool pins_adopted() const { return pins_adopted_; }  // took over the maps an earlier agent pinned
  const std::string& error() const { return error_; }  // why it is down
  const std::vector<IoctlDeviceFilter>& devices() const { return devices_; }

  // Reads the kernel maps now and returns the totals (scrapes call this too).
  std::map<IoctlKey, IoctlTotals> refresh() const;
  // Calls not counted, by reason: "inflight_map_full", "counter_map_full"
  // (counted under the overflow workload instead), "dropped".
  std::map<std::string, uint64_t> dropped() const;
  // Entries in the kernel counter map now, all or one cgroup's (tests).
  size_t kernel_entries(std::optional<uint64_t> cgroup_id = std::nullopt) const;

  void write_metrics(metrics::ExpositionWriter& out) const override;

 private:
  IoctlDeviceKind kind_of(uint32_t major, uint32_t minor) const;
  void prune_inflight() const;
  void retire_gone_cgroups(const std::map<IoctlKey, IoctlTotals>& reading) const;
  // The traced devices, exactly: those of an earlier configuration (a pinned
  // filter taken over) are removed once the current ones are in.
  void set_device_filter();

  IoctlPlaneOptions options_;
  std::vector<IoctlDeviceFilter> devices_;
  std::unique_ptr<probes::PinStore> pins_;  // none without bpf_pin_dir; outlives the program
  nvidia_ioctl* skel_ = nullptr;
  bool pins_adopted_ = false;
  std::string error_;
  mutable IoctlTotalsFolder folder_;
  mutable std::mutex refresh_mu_;
  mutable std::chrono::steady_clock::time_point next_prune_{};
  std::function<identity::Workload(uint64_t)> resolve_;
  std::shared_ptr<identity::WorkloadDirectory> own_directory_;  // when no resolve_workload was given
};

}  // namespace gpuledger::device
