#pragma once
// Which physical GPU a process means by a CUDA device ordinal. The kernel side
// knows only the ordinal of the current context's device; the process's
// environment and open device files tell what that ordinal stands for. Only an
// answer that is certain is given: anything else is unknown, never a guess.
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::identity {

// A physical GPU as the node's inventory knows it.
struct GpuIdentity {
  std::optional<unsigned> index;  // nvidia-smi / NVML index (PCI bus order): dcgm-exporter's "gpu"
  std::string uuid;               // "GPU-..." or "MIG-..."
  std::optional<unsigned> minor;  // /dev/nvidia<minor>
};

// What a process says about the devices it can see.
struct ProcessGpuView {
  std::optional<std::string> cuda_visible_devices;
  std::optional<std::string> nvidia_visible_devices;  // set by the NVIDIA container toolkit
  std::string cuda_device_order;                      // "PCI_BUS_ID" makes ordinals follow the index
  std::vector<unsigned> opened_minors;                // /dev/nvidiaN it has open
};

// Reads /proc/PID/environ and /proc/PID/fd; nullopt when the process is gone
// (or its environment cannot be read).
std::optional<ProcessGpuView> read_process_gpu_view(const std::string& proc_root, unsigned pid);

// The GPU behind `ordinal`, or nullopt when it cannot be known for sure.
std::optional<GpuIdentity> resolve_ordinal(const ProcessGpuView& view, unsigned ordinal,
                                           const std::vector<GpuIdentity>& inventory);

}  // namespace gpuledger::identity
