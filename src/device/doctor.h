#pragma once
// `gpuledger doctor`: which planes work on this node and, for each that does
// not, why. Each check is split into gathering facts (I/O, privileges, BPF
// load) and judging them (pure functions, unit-tested).
//
// Planes: attribution (eBPF uprobes on libcuda), inventory (/proc/driver/nvidia
// + NVML), nvml, dcgm-exporter, kubernetes (kubelet pod-resources socket).
// Exit code: 0 when the attribution plane is usable (OK or DEGRADED), else 1.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device/nvml_status.h"

namespace gpuledger::device {

enum class PlaneStatus { kOk, kDegraded, kUnavailable };
std::string_view plane_status_name(PlaneStatus status);  // "OK", "DEGRADED", "UNAVAILABLE"

struct PlaneReport {
  std::string plane;
  PlaneStatus status = PlaneStatus::kUnavailable;
  std::string reason;
};

// Linux capability numbers (linux/capability.h).
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapCheckpointRestore = 40;
inline constexpr int kCapPerfmon = 38;
inline constexpr int kCapBpf = 39;

struct AttributionFacts {
  std::string btf_path = "/sys/kernel/btf/vmlinux";
  bool btf_present = false;
  unsigned euid = 0;
  uint64_t effective_caps = 0;  // CapEff bits
  // nullopt: load not tried (no point without BTF/privilege); "" loaded fine.
  std::optional<std::string> bpf_load_error;
  std::vector<std::string> driver_paths_checked;
  std::vector<std::string> libcuda_found;  // host driver paths and /proc/*/maps hits
};
bool has_bpf_privilege(uint64_t effective_caps);
PlaneReport judge_attribution(const AttributionFacts& facts);

struct NvmlFacts {
  std::string library;
  NvmlStatus status = NvmlStatus::kUp;
  std::string open_error;  // empty: opened and initialised (status kUp)
  unsigned devices = 0;
  std::string driver_version;
  bool simulator = false;
};
PlaneReport judge_nvml(const NvmlFacts& facts);

struct InventoryFacts {
  std::string proc_root;
  size_t procfs_gpus = 0;
  size_t nvml_gpus = 0;
};
PlaneReport judge_inventory(const InventoryFacts& facts);

struct DcgmFacts {
  std::string url;  // empty: not configured
  bool reachable = false;
  std::string error;
  size_t dcgm_samples = 0;
  size_t devices = 0;
  bool has_profiling = false;
};
PlaneReport judge_dcgm(const DcgmFacts& facts);

struct PodResourcesFacts {
  std::string socket_path;
  bool exists = false;
  bool is_socket = false;
  std::string connect_error;  // empty: connected
};
PlaneReport judge_pod_resources(const PodResourcesFacts& facts);

struct DoctorOptions {
  std::string btf_path = "/sys/kernel/btf/vmlinux";
  std::string proc_root = "/proc";
  std::optional<std::vector<std::string>> driver_library_paths;  // default: probes::default_driver_library_paths()
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string nvidia_proc_root = "/proc/driver/nvidia";
  std::string dcgm_exporter_url;
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  // Loads the real CUDA probe program; returns "" on success or the error.
  // Default: constructs probes::CudaProbeProgram.
  std::function<std::string()> load_bpf;
  // The agent's pins (doctor_pins.h): "" when no bpffs is mounted.
  std::string bpf_pin_dir;
  std::chrono::seconds orphaned_pins_after{std::chrono::hours(24)};
};

// Fact gathering (does I/O).
AttributionFacts gather_attribution(const DoctorOptions& options);
NvmlFacts gather_nvml(const std::string& library);
PodResourcesFacts gather_pod_resources(const std::string& socket_path);
DcgmFacts gather_dcgm(const std::string& url);
uint64_t read_effective_caps(const std::string& proc_self_status = "/proc/self/status");

std::vector<PlaneReport> run_doctor(const DoctorOptions& options);
std::string format_doctor_table(const std::vector<PlaneReport>& reports);
int doctor_exit_code(const std::vector<PlaneReport>& reports);

}  // namespace gpuledger::device
