#include "device/capabilities.h"

#include <cctype>

namespace gpuledger::device {

const std::vector<AgentCapability>& agent_capabilities() {
  static const std::vector<AgentCapability> caps = {
      {39, "CAP_BPF", true, "cannot load the BPF programs or read their maps"},
      {38, "CAP_PERFMON", true, "cannot attach uprobes and tracepoints, or run tracing programs that read memory"},
      {19, "CAP_SYS_PTRACE", false,
       "cannot read /proc/PID/maps and /proc/PID/root of other users' processes: their libcuda is never probed"},
      {2, "CAP_DAC_READ_SEARCH", false,
       "cannot open a libcuda inside a container root or directory root may not read: it is never probed"},
      {34, "CAP_SYSLOG", false, "cannot read /dev/kmsg (kernel.dmesg_restrict=1): Xid errors are not counted"},
      {kCapCheckpointRestore, "CAP_CHECKPOINT_RESTORE", false,
       "cannot open mappings through /proc/PID/map_files: a driver deleted or replaced after a process mapped it "
       "(an upgrade under running jobs, a removed image) is never probed"},
  };
  return caps;
}

std::string setpriv_capability_list() {
  std::string out;
  for (const auto& cap : agent_capabilities()) {
    std::string name = std::string(cap.name).substr(4);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (out.empty() ? "+" : ",+") + name;
  }
  return out;
}

PlaneReport judge_capabilities(uint64_t caps) {
  PlaneReport r{"capabilities", PlaneStatus::kOk, ""};
  std::string held, missing;
  bool essential_missing = false;
  for (const auto& cap : agent_capabilities()) {
    if ((caps >> cap.number) & 1u) {
      held += (held.empty() ? "" : " ") + std::string(cap.name);
      continue;
    }
    // CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON (kernels before 5.8
    // know only it) and for CAP_CHECKPOINT_RESTORE (before 5.9).
    if ((cap.essential || cap.number == kCapCheckpointRestore) && ((caps >> kCapSysAdmin) & 1u)) continue;
    essential_missing |= cap.essential;
    missing += (missing.empty() ? "missing " : "; missing ") + std::string(cap.name) + ": " + cap.reason;
  }
  if (missing.empty()) {
    r.reason = "all held: " + held;
    return r;
  }
  r.status = essential_missing ? PlaneStatus::kUnavailable : PlaneStatus::kDegraded;
  r.reason = missing;
  return r;
}

}  // namespace gpuledger::device
