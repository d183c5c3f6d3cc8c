#pragma once
// The Linux capabilities the agent needs, each with the reason, and the
// judgement `gpuledger doctor` makes of a process's effective set. The list
// is the one docs/security.md explains and the least-privilege test runs the
// agent with (all others dropped); nothing else is needed (not CAP_SYS_ADMIN,
// not CAP_SYS_RESOURCE: BPF memory is charged to the cgroup, not RLIMIT_MEMLOCK).
#include <cstdint>
#include <string>
#include <vector>

#include "device/doctor.h"

namespace gpuledger::device {

struct AgentCapability {
  int number;          // linux/capability.h
  const char* name;    // CAP_...
  bool essential;      // without it the agent cannot attribute at all
  const char* reason;  // what breaks without it
};

// CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_SYSLOG.
const std::vector<AgentCapability>& agent_capabilities();

// "+bpf,+perfmon,..." for setpriv --bounding-set / --inh-caps.
std::string setpriv_capability_list();

// OK when all are held; DEGRADED naming each missing non-essential one (and
// what it costs); UNAVAILABLE naming the missing essential ones.
PlaneReport judge_capabilities(uint64_t effective_caps);

}  // namespace gpuledger::device
