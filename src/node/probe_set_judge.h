#pragma once
// `--probe-set auto`: whether the node's GPUs split their time themselves, so
// that the bill needs no probe on the hot path (docs/probe-sets.md).
//
// A node qualifies for the billing set when NVML is up and every GPU is one of
//   * a whole GPU whose NVML answers per-process utilisation samples and
//     that runs no MPS (no MPS client in NVML's lists, no MPS server among its
//     processes, not allocated as MPS replicas, no MPS control daemon on the
//     host), and that either runs processes of one workload at most (NVML's
//     lists; the kubelet allocates it to one pod at most) or whose samples
//     are seen to split it between processes: its SM time is split by those
//     samples (ledger/process_sm_meter.h). A driver that keeps one sample per
//     period for the whole GPU (580 on an H200, docs/gpu-validation.md)
//     cannot weigh two tenants time-slicing it: the launch probes must;
//   * a MIG-enabled GPU none of whose instances is held by more than one
//     workload (by NVML's process lists and by the allocation): each instance
//     is billed whole to its holder.
// Anything else needs the launch probes (MPS's samples are the server's, a
// shared MIG instance has none), and so does a node whose NVML is down.
//
// Everything here comes from the device side or the allocation, none from a
// tenant's say: a tenant can make a node full (start an MPS daemon), which
// costs it traps, never billing, which could hide its launches.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/device_snapshot.h"
#include "kubernetes/gpu_allocation.h"
#include "probes/probe_sets.h"

namespace gpuledger::node {

enum class ProbeSetReason {
  kDeviceSplits,       // every GPU qualifies: billing
  kNvmlDown,           // NVML cannot be asked
  kNoProcessSamples,   // a whole GPU's NVML gives no per-process samples
  kMps,                // a GPU runs MPS, or an MPS control daemon runs
  kSharedMigInstance,  // a MIG instance held by more than one workload
  kSharedGpu,          // a whole GPU time-sliced by workloads its samples cannot split
};
// The reason label of gpuledger_probe_set_changes_total: "device_splits",
// "nvml_down", "no_process_samples", "mps", "shared_mig_instance", "shared_gpu".
std::string_view reason_code(ProbeSetReason reason);

struct ProbeSetVerdict {
  probes::ProbeSet set = probes::ProbeSet::kFull;
  ProbeSetReason reason = ProbeSetReason::kNvmlDown;
  std::string why;  // in words, naming the GPU
};

struct NodeSplitFacts {
  const device::DeviceSnapshot* device = nullptr;
  // The workload a pid NVML lists belongs to ("" when nobody can say), for
  // the holders of MIG instances and of GPUs time-sliced.
  std::function<std::string(uint32_t pid, unsigned long long last_sample_us)> workload_of;
  // Whether the executable of a host pid is an MPS server or control daemon
  // (identity/infrastructure.h's name rule on /proc/PID/exe).
  std::function<bool(uint32_t pid)> runs_mps;
  bool mps_daemon_running = false;  // an nvidia-cuda-mps-control process on the host
  std::vector<kubernetes::GpuAllocation> allocations;  // the kubelet's, when known
};

ProbeSetVerdict judge_node(const NodeSplitFacts& facts);

// Turns verdicts into switches: to full at once (a count must not be missed
// longer than one judgement), back to billing only after the node has
// qualified for `settle` without a break, so a flapping GPU costs no churn of
// probes.
class ProbeSetSwitch {
 public:
  explicit ProbeSetSwitch(std::chrono::steady_clock::duration settle) : settle_(settle) {}
  // The set to switch to now, when it differs from `current`.
  std::optional<probes::ProbeSet> update(probes::ProbeSet current, const ProbeSetVerdict& verdict,
                                         std::chrono::steady_clock::time_point now);

 private:
  std::chrono::steady_clock::duration settle_;
  std::optional<std::chrono::steady_clock::time_point> qualified_since_;
};

}  // namespace gpuledger::node
