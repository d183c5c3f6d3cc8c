#pragma once
// `--probe-set auto` at run time: each observation judges the node
// (probe_set_judge.h) and switches the attribution plane's probe set when the
// verdict says so - to full at once, back to billing once the node has
// qualified for a while - logging why and counting each switch
// (gpuledger_probe_set_changes_total).
#include <chrono>
#include <optional>
#include <string>

#include "attribution/attribution_plane.h"
#include "device/device_snapshot.h"
#include "kubernetes/allocation_outage.h"
#include "node/probe_set_judge.h"

namespace gpuledger::node {

class ProbeSetAuto {
 public:
  ProbeSetAuto(attribution::AttributionPlane& plane, std::chrono::steady_clock::duration settle,
               std::string proc_root = "/proc")
      : plane_(plane), switch_(settle), proc_root_(std::move(proc_root)) {}

  // `snapshot`: the attribution plane's, when the caller has taken one (it
  // names the holders of MIG instances); none: taken only if needed.
  void judge(const device::DeviceSnapshot& devices, const attribution::AttributionSnapshot* snapshot,
             const kubernetes::BillingAllocation* allocation);

 private:
  // The host's processes are walked for an MPS control daemon at every
  // kDaemonWalkEvery-th judgement (its clients show in NVML's lists at once).
  static constexpr unsigned kDaemonWalkEvery = 6;

  attribution::AttributionPlane& plane_;
  ProbeSetSwitch switch_;
  std::string proc_root_;
  unsigned judgements_ = 0;
  bool mps_daemon_running_ = false;
};

// The node's split facts as the agent would gather them, for `doctor`: NVML
// polled once, host processes named by their cgroup.
ProbeSetVerdict judge_this_node(const std::string& nvml_library, const std::string& proc_root = "/proc");

}  // namespace gpuledger::node
