#pragma once
// The `device_checks:` section of the agent's configuration file (--config):
// the thresholds of the device data's cross-checks (device_quality.h).
//
//   device_checks:
//     busy_utilization: 0.5   # utilisation at or above this says the GPU was busy (0..1)
//     busy_spans: 0.25        # the probes' spans (or NVML's samples) covering this much of a window say busy
//     zero_epsilon: 0.001     # a profiling ratio at or below this reads 0
//     frozen_after: 15m       # a field unchanged this long while the others move is frozen
//     stopped_after: 10m      # a source with no value changed this long while the other moves stopped
//     moving_range: 0.2       # "the others move": another field's max - min over that time
//
// Every key is optional; unknown keys and values out of range are an Error
// naming file:line:column.
#include <string>

#include "ledger/device_quality.h"

namespace gpuledger::ledger {

DeviceCheckConfig parse_device_checks_section(const std::string& yaml_text, const std::string& source_name = "<config>");
DeviceCheckConfig load_device_checks_section(const std::string& path);

}  // namespace gpuledger::ledger
