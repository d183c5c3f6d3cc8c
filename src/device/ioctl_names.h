#pragma once
// Names for the NVIDIA driver ioctl plane: which device files are traced (the
// filter the agent loads into the kernel), what each device is called, and
// what each escape number means. Tables are copied from NVIDIA's open GPU
// kernel modules (nv_escape.h, nv-ioctl-numbers.h, uvm_ioctl.h,
// uvm_linux_ioctl.h); a number not in them is named "0x<hex>", never guessed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::device {

inline constexpr uint32_t kNvidiaMajor = 195;         // nvidia.ko: /dev/nvidia<N>, /dev/nvidiactl
inline constexpr uint32_t kNvidiaCtlMinor = 255;      // /dev/nvidiactl
inline constexpr uint32_t kNvidiaModesetMinor = 254;  // /dev/nvidia-modeset
inline constexpr uint32_t kNvidiaMaxGpuMinor = 247;   // GPUs are minors 0..247

// Which escape table names a device's calls, and so how the kernel takes the
// escape from the request: nvidia.ko's NV_ESC_* are _IOC_NR(request); the UVM
// driver's commands are whole request numbers.
enum class IoctlDeviceKind {
  kNvidia,  // nvidia.ko (major 195): escape = _IOC_NR(request), NV_ESC_* names
  kUvm,     // nvidia-uvm: escape = the request, UVM_* names
  kOther,   // anything else (tests): escape = _IOC_NR(request), hex names
};
std::string_view to_string(IoctlDeviceKind kind);  // "nvidia", "uvm", "other"

// One traced device: a major and one minor or all of them.
struct IoctlDeviceFilter {
  uint32_t major = 0;
  std::optional<uint32_t> minor;  // nullopt: every minor
  IoctlDeviceKind kind = IoctlDeviceKind::kOther;
  bool escape_is_full_request() const { return kind == IoctlDeviceKind::kUvm; }
  bool operator==(const IoctlDeviceFilter&) const = default;
};

// Parses a --nvidia-ioctl-device value:
//   MAJOR[:MINOR][=nvidia|uvm|other]   e.g. "195", "195:255", "1:3=nvidia"
//   NAME[=nvidia|uvm|other]            a character device name in /proc/devices
//                                      ("nvidia-uvm"), resolved through `proc_devices`
// Without "=kind": major 195 is nvidia, a name starting "nvidia-uvm" is uvm,
// anything else other. Returns nullopt (and says why in `error`) when the
// value is malformed or the name is not in /proc/devices.
std::optional<IoctlDeviceFilter> parse_ioctl_device_spec(std::string_view spec, std::string_view proc_devices,
                                                         std::string* error = nullptr);

// The major of a character device driver named in /proc/devices text.
std::optional<uint32_t> char_device_major(std::string_view proc_devices, std::string_view name);

// Every --nvidia-ioctl-device value parsed against /proc/devices (read from
// `proc_devices_path`); none: default_ioctl_devices(). Throws Error naming the
// first value that cannot be used.
std::vector<IoctlDeviceFilter> resolve_ioctl_devices(const std::vector<std::string>& specs,
                                                     const std::string& proc_devices_path = "/proc/devices");

// The default filter: nvidia.ko's major (every minor) and, when the UVM module
// is loaded (listed in /proc/devices), nvidia-uvm's dynamic major.
std::vector<IoctlDeviceFilter> default_ioctl_devices(std::string_view proc_devices);

// The device label: "nvidiactl", "nvidia-modeset", "nvidia<N>" for nvidia.ko;
// "nvidia-uvm" (minor 0), "nvidia-uvm-tools" (minor 1) for UVM; "<major>:<minor>"
// otherwise.
std::string ioctl_device_label(IoctlDeviceKind kind, uint32_t major, uint32_t minor);

// The escape label: the driver's macro name ("NV_ESC_RM_CONTROL",
// "UVM_INITIALIZE"), or "0x<hex>" for a number the tables do not have.
std::string ioctl_escape_name(IoctlDeviceKind kind, uint32_t escape);

}  // namespace gpuledger::device
