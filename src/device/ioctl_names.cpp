#include "device/ioctl_names.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/error.h"

namespace gpuledger::device {
namespace {

struct Named {
  uint32_t value;
  std::string_view name;
};

// nv_escape.h (src/nvidia/arch/nvalloc/unix/include) and nv-ioctl-numbers.h
// (kernel-open/common/inc): _IOC_NR of nvidia.ko's requests ('F' magic).
constexpr Named kNvEscapes[] = {
    {0x27, "NV_ESC_RM_ALLOC_MEMORY"},
    {0x28, "NV_ESC_RM_ALLOC_OBJECT"},
    {0x29, "NV_ESC_RM_FREE"},
    {0x2A, "NV_ESC_RM_CONTROL"},
    {0x2B, "NV_ESC_RM_ALLOC"},
    {0x32, "NV_ESC_RM_CONFIG_GET"},
    {0x33, "NV_ESC_RM_CONFIG_SET"},
    {0x34, "NV_ESC_RM_DUP_OBJECT"},
    {0x35, "NV_ESC_RM_SHARE"},
    {0x37, "NV_ESC_RM_CONFIG_GET_EX"},
    {0x38, "NV_ESC_RM_CONFIG_SET_EX"},
    {0x39, "NV_ESC_RM_I2C_ACCESS"},
    {0x41, "NV_ESC_RM_IDLE_CHANNELS"},
    {0x4A, "NV_ESC_RM_VID_HEAP_CONTROL"},
    {0x4D, "NV_ESC_RM_ACCESS_REGISTRY"},
    {0x4E, "NV_ESC_RM_MAP_MEMORY"},
    {0x4F, "NV_ESC_RM_UNMAP_MEMORY"},
    {0x52, "NV_ESC_RM_GET_EVENT_DATA"},
    {0x54, "NV_ESC_RM_ALLOC_CONTEXT_DMA2"},
    {0x56, "NV_ESC_RM_ADD_VBLANK_CALLBACK"},
    {0x57, "NV_ESC_RM_MAP_MEMORY_DMA"},
    {0x58, "NV_ESC_RM_UNMAP_MEMORY_DMA"},
    {0x59, "NV_ESC_RM_BIND_CONTEXT_DMA"},
    {0x5C, "NV_ESC_RM_EXPORT_OBJECT_TO_FD"},
    {0x5D, "NV_ESC_RM_IMPORT_OBJECT_FROM_FD"},
    {0x5E, "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO"},
    {0x5F, "NV_ESC_RM_LOCKLESS_DIAGNOSTIC"},
    {200 + 0, "NV_ESC_CARD_INFO"},
    {200 + 1, "NV_ESC_REGISTER_FD"},
    {200 + 6, "NV_ESC_ALLOC_OS_EVENT"},
    {200 + 7, "NV_ESC_FREE_OS_EVENT"},
    {200 + 9, "NV_ESC_STATUS_CODE"},
    {200 + 10, "NV_ESC_CHECK_VERSION_STR"},
    {200 + 11, "NV_ESC_IOCTL_XFER_CMD"},
    {200 + 12, "NV_ESC_ATTACH_GPUS_TO_FD"},
    {200 + 13, "NV_ESC_QUERY_DEVICE_INTR"},
    {200 + 14, "NV_ESC_SYS_PARAMS"},
    {200 + 17, "NV_ESC_EXPORT_TO_DMABUF_FD"},
    {200 + 18, "NV_ESC_WAIT_OPEN_COMPLETE"},
};

// uvm_ioctl.h and uvm_linux_ioctl.h (kernel-open/nvidia-uvm): on Linux
// UVM_IOCTL_BASE(i) is i, so the request number is the command itself.
// (UVM_REGION_SET_BACKING / UNSET_BACKING, 21 and 22, are Windows-only.)
constexpr Named kUvmCommands[] = {
    {1, "UVM_RESERVE_VA"},
    {2, "UVM_RELEASE_VA"},
    {3, "UVM_REGION_COMMIT"},
    {4, "UVM_REGION_DECOMMIT"},
    {5, "UVM_REGION_SET_STREAM"},
    {6, "UVM_SET_STREAM_RUNNING"},
    {7, "UVM_SET_STREAM_STOPPED"},
    {9, "UVM_RUN_TEST"},
    {10, "UVM_ADD_SESSION"},
    {11, "UVM_REMOVE_SESSION"},
    {12, "UVM_ENABLE_COUNTERS"},
    {13, "UVM_MAP_COUNTER"},
    {14, "UVM_CREATE_EVENT_QUEUE"},
    {15, "UVM_REMOVE_EVENT_QUEUE"},
    {16, "UVM_MAP_EVENT_QUEUE"},
    {17, "UVM_EVENT_CTRL"},
    {18, "UVM_REGISTER_MPS_SERVER"},
    {19, "UVM_REGISTER_MPS_CLIENT"},
    {20, "UVM_GET_GPU_UUID_TABLE"},
    {23, "UVM_CREATE_RANGE_GROUP"},
    {24, "UVM_DESTROY_RANGE_GROUP"},
    {25, "UVM_REGISTER_GPU_VASPACE"},
    {26, "UVM_UNREGISTER_GPU_VASPACE"},
    {27, "UVM_REGISTER_CHANNEL"},
    {28, "UVM_UNREGISTER_CHANNEL"},
    {29, "UVM_ENABLE_PEER_ACCESS"},
    {30, "UVM_DISABLE_PEER_ACCESS"},
    {31, "UVM_SET_RANGE_GROUP"},
    {33, "UVM_MAP_EXTERNAL_ALLOCATION"},
    {34, "UVM_FREE"},
    {35, "UVM_MEM_MAP"},
    {36, "UVM_DEBUG_ACCESS_MEMORY"},
    {37, "UVM_REGISTER_GPU"},
    {38, "UVM_UNREGISTER_GPU"},
    {39, "UVM_PAGEABLE_MEM_ACCESS"},
    {40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS"},
    {41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS"},
    {42, "UVM_SET_PREFERRED_LOCATION"},
    {43, "UVM_UNSET_PREFERRED_LOCATION"},
    {44, "UVM_ENABLE_READ_DUPLICATION"},
    {45, "UVM_DISABLE_READ_DUPLICATION"},
    {46, "UVM_SET_ACCESSED_BY"},
    {47, "UVM_UNSET_ACCESSED_BY"},
    {51, "UVM_MIGRATE"},
    {53, "UVM_MIGRATE_RANGE_GROUP"},
    {54, "UVM_ENABLE_SYSTEM_WIDE_ATOMICS"},
    {55, "UVM_DISABLE_SYSTEM_WIDE_ATOMICS"},
    {56, "UVM_TOOLS_INIT_EVENT_TRACKER"},
    {57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD"},
    {58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS"},
    {59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS"},
    {60, "UVM_TOOLS_ENABLE_COUNTERS"},
    {61, "UVM_TOOLS_DISABLE_COUNTERS"},
    {62, "UVM_TOOLS_READ_PROCESS_MEMORY"},
    {63, "UVM_TOOLS_WRITE_PROCESS_MEMORY"},
    {64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE"},
    {65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION"},
    {66, "UVM_UNMAP_EXTERNAL"},
    {67, "UVM_TOOLS_FLUSH_EVENTS"},
    {68, "UVM_ALLOC_SEMAPHORE_POOL"},
    {69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES"},
    {70, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU"},
    {71, "UVM_POPULATE_PAGEABLE"},
    {72, "UVM_VALIDATE_VA_RANGE"},
    {73, "UVM_CREATE_EXTERNAL_RANGE"},
    {74, "UVM_MAP_EXTERNAL_SPARSE"},
    {2047, "UVM_IS_8_SUPPORTED"},
    {0x30000001, "UVM_INITIALIZE"},
    {0x30000002, "UVM_DEINITIALIZE"},
};

template <size_t N>
std::optional<std::string_view> lookup(const Named (&table)[N], uint32_t value) {
  for (const auto& n : table)
    if (n.value == value) return n.name;
  return std::nullopt;
}

std::string hex(uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", value);
  return buf;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<uint32_t> parse_u32(std::string_view s) {
  uint32_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<IoctlDeviceKind> parse_kind(std::string_view s) {
  if (s == "nvidia") return IoctlDeviceKind::kNvidia;
  if (s == "uvm") return IoctlDeviceKind::kUvm;
  if (s == "other") return IoctlDeviceKind::kOther;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(IoctlDeviceKind kind) {
  switch (kind) {
    case IoctlDeviceKind::kNvidia: return "nvidia";
    case IoctlDeviceKind::kUvm: return "uvm";
    case IoctlDeviceKind::kOther: return "other";
  }
  return "other";
}

std::optional<uint32_t> char_device_major(std::string_view proc_devices, std::string_view name) {
  // "Character devices:\n  1 mem\n...\n\nBlock devices:\n..."
  bool in_char = false;
  size_t pos = 0;
  while (pos <= proc_devices.size()) {
    size_t nl = proc_devices.find('\n', pos);
    std::string_view line =
        proc_devices.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? proc_devices.size() + 1 : nl + 1;
    line = trim(line);
    if (line.starts_with("Character devices:")) {
      in_char = true;
      continue;
    }
    if (line.starts_with("Block devices:")) {
      in_char = false;
      continue;
    }
    if (!in_char || line.empty()) continue;
    size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) continue;
    if (trim(line.substr(sp)) == name) return parse_u32(line.substr(0, sp));
  }
  return std::nullopt;
}

std::optional<IoctlDeviceFilter> parse_ioctl_device_spec(std::string_view spec, std::string_view proc_devices,
                                                         std::string* error) {
  auto fail = [&](std::string why) -> std::optional<IoctlDeviceFilter> {
    if (error) *error = "nvidia ioctl device '" + std::string(spec) + "': " + why;
    return std::nullopt;
  };
  std::string_view body = trim(spec);
  std::optional<IoctlDeviceKind> kind;
  if (auto eq = body.find('='); eq != std::string_view::npos) {
    kind = parse_kind(body.substr(eq + 1));
    if (!kind) return fail("kind must be nvidia, uvm or other");
    body = body.substr(0, eq);
  }
  if (body.empty()) return fail("empty");
  IoctlDeviceFilter f;
  if (body.front() >= '0' && body.front() <= '9') {
    auto colon = body.find(':');
    auto major = parse_u32(body.substr(0, colon));
    if (!major || *major >= (1u << 12)) return fail("bad major");
    f.major = *major;
    if (colon != std::string_view::npos) {
      auto minor = parse_u32(body.substr(colon + 1));
      if (!minor || *minor >= (1u << 20)) return fail("bad minor");
      f.minor = *minor;
    }
    f.kind = kind.value_or(f.major == kNvidiaMajor ? IoctlDeviceKind::kNvidia : IoctlDeviceKind::kOther);
  } else {
    auto major = char_device_major(proc_devices, body);
    if (!major) return fail("no such character device driver in /proc/devices");
    f.major = *major;
    f.kind = kind.value_or(body.starts_with("nvidia-uvm")
                               ? IoctlDeviceKind::kUvm
                               : (f.major == kNvidiaMajor ? IoctlDeviceKind::kNvidia : IoctlDeviceKind::kOther));
  }
  return f;
}

std::vector<IoctlDeviceFilter> default_ioctl_devices(std::string_view proc_devices) {
  std::vector<IoctlDeviceFilter> out{{kNvidiaMajor, std::nullopt, IoctlDeviceKind::kNvidia}};
  if (auto uvm = char_device_major(proc_devices, "nvidia-uvm"))
    out.push_back({*uvm, std::nullopt, IoctlDeviceKind::kUvm});
  return out;
}

std::vector<IoctlDeviceFilter> resolve_ioctl_devices(const std::vector<std::string>& specs,
                                                     const std::string& proc_devices_path) {
  std::ifstream in(proc_devices_path);
  std::stringstream text;
  text << in.rdbuf();
  if (specs.empty()) return default_ioctl_devices(text.str());
  std::vector<IoctlDeviceFilter> out;
  for (const auto& spec : specs) {
    std::string why;
    auto f = parse_ioctl_device_spec(spec, text.str(), &why);
    if (!f) throw Error(why);
    out.push_back(*f);
  }
  return out;
}

std::string ioctl_device_label(IoctlDeviceKind kind, uint32_t major, uint32_t minor) {
  switch (kind) {
    case IoctlDeviceKind::kNvidia:
      if (minor == kNvidiaCtlMinor) return "nvidiactl";
      if (minor == kNvidiaModesetMinor) return "nvidia-modeset";
      return "nvidia" + std::to_string(minor);
    case IoctlDeviceKind::kUvm:
      if (minor == 0) return "nvidia-uvm";
      if (minor == 1) return "nvidia-uvm-tools";
      break;
    case IoctlDeviceKind::kOther: break;
  }
  return std::to_string(major) + ":" + std::to_string(minor);
}

std::string ioctl_escape_name(IoctlDeviceKind kind, uint32_t escape) {
  std::optional<std::string_view> name;
  if (kind == IoctlDeviceKind::kNvidia) name = lookup(kNvEscapes, escape);
  if (kind == IoctlDeviceKind::kUvm) name = lookup(kUvmCommands, escape);
  return name ? std::string(*name) : hex(escape);
}

}  // namespace gpuledger::device
