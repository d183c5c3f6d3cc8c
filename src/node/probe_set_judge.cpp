#include "node/probe_set_judge.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace gpuledger::node {
namespace {

std::string gpu_name(const device::GpuInfo& g) {
  std::string name = g.index ? "GPU " + std::to_string(*g.index) : "a GPU";
  return g.uuid.empty() ? name : name + " (" + g.uuid + ")";
}

ProbeSetVerdict needs_full(ProbeSetReason reason, std::string why) {
  return {probes::ProbeSet::kFull, reason, std::move(why)};
}

// MPS on a GPU, by NVML's lists: a client, or a process that is the server.
bool runs_mps(const NodeSplitFacts& facts, const std::string& uuid) {
  for (const auto& p : facts.device->processes)
    if (p.gpu_uuid == uuid && (p.mps || (facts.runs_mps && facts.runs_mps(p.pid)))) return true;
  return false;
}

// The workloads on each MIG instance of `uuid` (by its id), or on the whole
// GPU (nullopt), by NVML's lists: a pid nobody can name is a holder of its
// own (it may be anybody's).
std::map<std::optional<unsigned>, std::set<std::string>> holders_of(const NodeSplitFacts& facts,
                                                                    const std::string& uuid) {
  std::map<std::optional<unsigned>, std::set<std::string>> holders;
  std::map<uint32_t, unsigned long long> last_sample;
  for (const auto& s : facts.device->process_sm)
    if (s.gpu_uuid == uuid) last_sample[s.pid] = s.last_sample_us;
  for (const auto& p : facts.device->processes) {
    if (p.gpu_uuid != uuid) continue;
    std::string who = facts.workload_of ? facts.workload_of(p.pid, last_sample[p.pid]) : "";
    holders[p.gpu_instance_id].insert(who.empty() ? "pid " + std::to_string(p.pid) : who);
  }
  return holders;
}

// The MIG instance of `uuid` with more than one holder.
std::optional<unsigned> shared_instance(const NodeSplitFacts& facts, const std::string& uuid) {
  for (const auto& [instance, who] : holders_of(facts, uuid))
    if (instance && who.size() > 1) return instance;
  return std::nullopt;
}

// Why a whole GPU is time-sliced by more than one workload now: its
// processes, or the kubelet's pods on it. Empty when it is not.
std::string shared_whole_gpu(const NodeSplitFacts& facts, const std::string& uuid) {
  auto holders = holders_of(facts, uuid);
  if (auto it = holders.find(std::nullopt); it != holders.end() && it->second.size() > 1)
    return "runs processes of " + std::to_string(it->second.size()) + " workloads";
  std::set<std::pair<std::string, std::string>> pods;
  for (const auto& a : facts.allocations)
    if (a.device.uuid == uuid && a.device.mig_instance.empty() && !a.mode.starts_with("mig"))
      pods.insert({a.namespace_name, a.pod});
  if (pods.size() > 1) return "is allocated to " + std::to_string(pods.size()) + " pods";
  return "";
}

// The allocation's word: MPS replicas of a GPU, or a MIG instance held by
// more than one pod. Empty when it says neither.
std::optional<ProbeSetVerdict> allocation_verdict(const std::vector<kubernetes::GpuAllocation>& allocations) {
  std::map<std::string, std::set<std::pair<std::string, std::string>>> mig_holders;
  for (const auto& a : allocations) {
    if (a.mode == "mps")
      return needs_full(ProbeSetReason::kMps, "the kubelet allocates " + a.device.uuid + " as MPS replicas");
    if (a.device.mig_instance.empty() && !a.mode.starts_with("mig")) continue;
    mig_holders[a.device.uuid + " instance " + a.device.mig_instance].insert({a.namespace_name, a.pod});
  }
  for (const auto& [instance, pods] : mig_holders)
    if (pods.size() > 1)
      return needs_full(ProbeSetReason::kSharedMigInstance,
                        "the kubelet allocates MIG " + instance + " to " + std::to_string(pods.size()) + " pods");
  return std::nullopt;
}

}  // namespace

std::string_view reason_code(ProbeSetReason reason) {
  switch (reason) {
    case ProbeSetReason::kDeviceSplits: return "device_splits";
    case ProbeSetReason::kNvmlDown: return "nvml_down";
    case ProbeSetReason::kNoProcessSamples: return "no_process_samples";
    case ProbeSetReason::kMps: return "mps";
    case ProbeSetReason::kSharedMigInstance: return "shared_mig_instance";
    case ProbeSetReason::kSharedGpu: return "shared_gpu";
  }
  return "nvml_down";
}

ProbeSetVerdict judge_node(const NodeSplitFacts& facts) {
  if (!facts.device || !facts.device->health.nvml_up)
    return needs_full(ProbeSetReason::kNvmlDown,
                      "NVML is not up" + (facts.device && !facts.device->health.nvml_error.empty()
                                              ? " (" + facts.device->health.nvml_error + ")"
                                              : std::string()) +
                          ": nothing splits the GPUs' time but the launch probes");
  if (facts.mps_daemon_running)
    return needs_full(ProbeSetReason::kMps, "an MPS control daemon runs on the node: its clients' samples are the "
                                            "server's");
  if (auto v = allocation_verdict(facts.allocations)) return *v;
  for (const auto& g : facts.device->gpus) {
    if (!g.process_samples && !std::count(g.origins.begin(), g.origins.end(), "nvml")) continue;  // not NVML's GPU
    if (runs_mps(facts, g.uuid))
      return needs_full(ProbeSetReason::kMps, gpu_name(g) + " runs MPS: its per-process samples are the server's");
    if (g.mig_enabled.value_or(false)) {
      if (auto instance = shared_instance(facts, g.uuid))
        return needs_full(ProbeSetReason::kSharedMigInstance,
                          "MIG instance " + std::to_string(*instance) + " of " + gpu_name(g) +
                              " runs processes of more than one workload");
      continue;  // each instance billed whole to its one holder
    }
    if (!g.process_samples.value_or(false))
      return needs_full(ProbeSetReason::kNoProcessSamples,
                        "NVML gives no per-process samples for " + gpu_name(g) +
                            (g.process_samples_error.empty() ? "" : " (" + g.process_samples_error + ")"));
    // Samples seen to split the GPU between processes weigh its tenants; any
    // other (one process per period, or not seen yet) only while one has it.
    if (g.process_samples_split != true) {
      if (std::string shared = shared_whole_gpu(facts, g.uuid); !shared.empty())
        return needs_full(ProbeSetReason::kSharedGpu,
                          gpu_name(g) + " " + shared + ", and its NVML " +
                              (g.process_samples_split == false ? "samples one process per period"
                                                                : "has not been seen to sample two at once") +
                              ": only the launch probes split its time");
    }
  }
  return {probes::ProbeSet::kBilling, ProbeSetReason::kDeviceSplits,
          "NVML splits every GPU's time itself (per-process samples, no MPS, no shared MIG instance, no GPU "
          "time-sliced by workloads its samples cannot split)"};
}

std::optional<probes::ProbeSet> ProbeSetSwitch::update(probes::ProbeSet current, const ProbeSetVerdict& verdict,
                                                       std::chrono::steady_clock::time_point now) {
  if (verdict.set == probes::ProbeSet::kFull) {
    qualified_since_.reset();
    if (current != probes::ProbeSet::kFull) return probes::ProbeSet::kFull;
    return std::nullopt;
  }
  if (!qualified_since_) qualified_since_ = now;
  if (current != probes::ProbeSet::kBilling && now - *qualified_since_ >= settle_) return probes::ProbeSet::kBilling;
  return std::nullopt;
}

}  // namespace gpuledger::node
