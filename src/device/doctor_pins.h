#pragma once
// `gpuledger doctor`'s look at the pinned data plane: pins that no agent
// holds mean probes that trap every CUDA call on the node for nobody.
#include <chrono>
#include <string>

#include "device/doctor.h"

namespace gpuledger::device {

struct PinFacts {
  std::string dir;                   // --bpf-pin-dir; "" when no bpffs is mounted
  bool pinned = false;               // something is pinned there
  bool agent_holds = false;          // a running agent holds a plane's lock
  std::string lock_error;            // neither held nor free: why not known
  std::chrono::seconds heartbeat_age{0};
  std::chrono::seconds orphaned_after{std::chrono::hours(24)};
};
PlaneReport judge_pins(const PinFacts& facts);
PinFacts gather_pins(const std::string& dir, std::chrono::seconds orphaned_after);

}  // namespace gpuledger::device
