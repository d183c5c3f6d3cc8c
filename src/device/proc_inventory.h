#pragma once
// GPU inventory from the NVIDIA kernel driver's procfs:
// <root>/gpus/<bus location>/information, one file per GPU, lines such as
//   "Model: \t\t NVIDIA A100-SXM4-80GB", "GPU UUID: \t GPU-...",
//   "Bus Location: \t 0000:07:00.0", "Device Minor: \t 0", "GPU Excluded:\t No".
// Needs no NVIDIA userspace at all. MIG mode is not in these files (nullopt).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "device/device_snapshot.h"

namespace gpuledger::device {

inline constexpr std::string_view kDefaultNvidiaProcRoot = "/proc/driver/nvidia";

// "Key: value" pairs of one information file (keys and values trimmed).
std::map<std::string, std::string> parse_information_file(std::string_view text);

// Every GPU under `root`/gpus that the driver has not excluded. Indices follow
// NVML's enumeration (PCI bus order). Empty when the driver is not loaded.
std::vector<GpuInfo> read_proc_inventory(const std::string& root = std::string(kDefaultNvidiaProcRoot));

}  // namespace gpuledger::device
