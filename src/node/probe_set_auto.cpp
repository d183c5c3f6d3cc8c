#include "node/probe_set_auto.h"

#include "common/error.h"
#include "device/nvml_client.h"
#include "identity/infrastructure.h"
#include "identity/process_cgroup.h"
#include "node/process_owners.h"

namespace gpuledger::node {

void ProbeSetAuto::judge(const device::DeviceSnapshot& devices, const attribution::AttributionSnapshot* snapshot,
                         const kubernetes::BillingAllocation* allocation) {
  std::optional<attribution::AttributionSnapshot> taken;
  std::optional<ProcessOwners> owners;
  NodeSplitFacts facts;
  facts.device = &devices;
  facts.workload_of = [&](uint32_t pid, unsigned long long last_sample_us) -> std::string {
    if (!owners) {
      if (!snapshot) snapshot = &taken.emplace(plane_.snapshot());
      owners.emplace(*snapshot);
    }
    auto owner = owners->of(pid, last_sample_us);
    return owner ? owner->account : "";
  };
  facts.runs_mps = [this](uint32_t pid) { return identity::runs_mps_executable(proc_root_, pid); };
  if (judgements_++ % kDaemonWalkEvery == 0) mps_daemon_running_ = identity::mps_control_daemon_running(proc_root_);
  facts.mps_daemon_running = mps_daemon_running_;
  if (allocation) facts.allocations = allocation->allocations;
  const ProbeSetVerdict verdict = judge_node(facts);
  const probes::ProbeSet current = plane_.probe_set();
  const auto next = switch_.update(current, verdict, std::chrono::steady_clock::now());
  const std::string why = "auto: " + verdict.why;
  if (next) {
    plane_.set_probe_set(*next, std::string(reason_code(verdict.reason)), why);
  } else if (current == verdict.set) {
    plane_.set_probe_set(current, std::string(reason_code(verdict.reason)), why);  // the reason, kept current
  }
}

ProbeSetVerdict judge_this_node(const std::string& nvml_library, const std::string& proc_root) {
  device::DeviceSnapshot devices;
  try {
    auto nvml = device::NvmlClient::open(nvml_library);
    auto poll = nvml->poll("");
    devices.gpus = std::move(poll.gpus);
    devices.processes = std::move(poll.processes);
    devices.process_sm = std::move(poll.process_sm);
    devices.health.nvml_up = true;
    devices.health.nvml_status = device::NvmlStatus::kUp;
  } catch (const Error& e) {
    devices.health.nvml_error = e.what();
  }
  NodeSplitFacts facts;
  facts.device = &devices;
  facts.workload_of = [&](uint32_t pid, unsigned long long) {
    auto process = identity::read_process_cgroup(proc_root, pid);
    return process ? process->cgroup_path : std::string();
  };
  facts.runs_mps = [&](uint32_t pid) { return identity::runs_mps_executable(proc_root, pid); };
  facts.mps_daemon_running = identity::mps_control_daemon_running(proc_root);
  return judge_node(facts);
}

}  // namespace gpuledger::node
