#include "device/doctor.h"
#include "device/doctor_pins.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/inert_text.h"
#include "device/capabilities.h"
#include "device/dcgm_scraper.h"
#include "device/nvml_client.h"
#include "device/proc_inventory.h"
#include "probes/cuda_probe_program.h"
#include "probes/library_discovery.h"

namespace gpuledger::device {

std::string_view plane_status_name(PlaneStatus status) {
  switch (status) {
    case PlaneStatus::kOk: return "OK";
    case PlaneStatus::kDegraded: return "DEGRADED";
    case PlaneStatus::kUnavailable: return "UNAVAILABLE";
  }
  return "?";
}

bool has_bpf_privilege(uint64_t caps) {
  auto has = [&](int cap) { return (caps >> cap) & 1u; };
  return has(kCapSysAdmin) || (has(kCapBpf) && has(kCapPerfmon));
}

PlaneReport judge_attribution(const AttributionFacts& f) {
  PlaneReport r{"attribution (eBPF)", PlaneStatus::kUnavailable, ""};
  if (!f.btf_present) {
    r.reason = "no BTF at " + f.btf_path + " (kernel lacks CONFIG_DEBUG_INFO_BTF; CO-RE programs cannot load)";
    return r;
  }
  if (!has_bpf_privilege(f.effective_caps)) {
    r.reason = f.euid != 0 ? "not root and no CAP_BPF+CAP_PERFMON (run as root or grant them)"
                           : "root but without CAP_SYS_ADMIN or CAP_BPF+CAP_PERFMON (a restricted container?)";
    return r;
  }
  if (!f.bpf_load_error) {
    r.reason = "BPF program load not tried";
    return r;
  }
  if (!f.bpf_load_error->empty()) {
    r.reason = "BPF program load fails: " + *f.bpf_load_error;
    return r;
  }
  if (f.libcuda_found.empty()) {
    r.status = PlaneStatus::kDegraded;
    r.reason = "probe program loads, but no libcuda found (checked " + std::to_string(f.driver_paths_checked.size()) +
               " driver paths and /proc/*/maps); probes attach when a process loads one";
    return r;
  }
  r.status = PlaneStatus::kOk;
  r.reason = "probe program loads; libcuda: " + f.libcuda_found.front();
  if (f.libcuda_found.size() > 1) r.reason += " (+" + std::to_string(f.libcuda_found.size() - 1) + " more)";
  return r;
}

PlaneReport judge_nvml(const NvmlFacts& f) {
  PlaneReport r{"nvml", PlaneStatus::kUnavailable, ""};
  switch (f.status) {
    case NvmlStatus::kUp: break;
    case NvmlStatus::kDisabled:
    case NvmlStatus::kLibraryAbsent: r.reason = "NVML absent: " + f.open_error; return r;
    case NvmlStatus::kDriverNotLoaded:
      // The library works; the GPUs come once the kernel module is loaded
      // (the agent keeps retrying), so the plane is degraded, not missing.
      r.status = PlaneStatus::kDegraded;
      r.reason = f.open_error + "; no GPU readings until the NVIDIA kernel module is loaded (the agent retries)";
      return r;
    case NvmlStatus::kLibraryIncomplete:
    case NvmlStatus::kInitFailed: r.reason = f.open_error; return r;
  }
  std::string what = f.library + (f.simulator ? " (gpuledger NVML simulator)" : "");
  if (f.devices == 0) {
    r.status = PlaneStatus::kDegraded;
    r.reason = what + " loads, but reports no GPUs";
    return r;
  }
  r.status = PlaneStatus::kOk;
  r.reason = what + ": " + std::to_string(f.devices) + " GPU(s)";
  if (!f.driver_version.empty()) r.reason += ", driver " + f.driver_version;
  return r;
}

PlaneReport judge_inventory(const InventoryFacts& f) {
  PlaneReport r{"inventory", PlaneStatus::kUnavailable, ""};
  size_t n = std::max(f.procfs_gpus, f.nvml_gpus);
  if (n == 0) {
    r.reason = "no GPUs under " + f.proc_root + "/gpus (NVIDIA kernel driver not loaded) and none from NVML";
    return r;
  }
  r.status = PlaneStatus::kOk;
  r.reason = std::to_string(n) + " GPU(s): " + std::to_string(f.procfs_gpus) + " in " + f.proc_root + ", " +
             std::to_string(f.nvml_gpus) + " from NVML";
  return r;
}

PlaneReport judge_dcgm(const DcgmFacts& f) {
  PlaneReport r{"dcgm-exporter", PlaneStatus::kUnavailable, ""};
  if (f.url.empty()) {
    r.reason = "not configured (give --dcgm-exporter URL)";
    return r;
  }
  if (!f.reachable) {
    r.reason = "unreachable: " + f.error;
    return r;
  }
  if (f.dcgm_samples == 0) {
    r.status = PlaneStatus::kDegraded;
    r.reason = f.url + " answers but serves no DCGM_FI_* series";
    return r;
  }
  if (!f.has_profiling) {
    r.status = PlaneStatus::kDegraded;
    r.reason = std::to_string(f.devices) +
               " device(s), but no DCGM_FI_PROF_* series (profiling fields not in the exporter's counters, or "
               "the GPU does not support them)";
    return r;
  }
  r.status = PlaneStatus::kOk;
  r.reason = std::to_string(f.devices) + " device(s) with profiling fields at " + f.url;
  return r;
}

PlaneReport judge_pod_resources(const PodResourcesFacts& f) {
  PlaneReport r{"kubernetes pod-resources", PlaneStatus::kUnavailable, ""};
  if (!f.exists) {
    r.reason = "no pod-resources socket at " + f.socket_path + " (not a Kubernetes node, or kubelet dir not mounted)";
    return r;
  }
  if (!f.is_socket) {
    r.reason = f.socket_path + " is not a socket";
    return r;
  }
  if (!f.connect_error.empty()) {
    r.reason = "cannot connect to " + f.socket_path + ": " + f.connect_error;
    return r;
  }
  r.status = PlaneStatus::kOk;
  r.reason = f.socket_path + " accepts connections";
  return r;
}

uint64_t read_effective_caps(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    try {
      return std::stoull(line.substr(7), nullptr, 16);
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

AttributionFacts gather_attribution(const DoctorOptions& options) {
  AttributionFacts f;
  f.btf_path = options.btf_path;
  struct stat st {};
  f.btf_present = ::stat(options.btf_path.c_str(), &st) == 0;
  f.euid = ::geteuid();
  f.effective_caps = read_effective_caps(options.proc_root + "/self/status");
  if (f.btf_present && has_bpf_privilege(f.effective_caps)) {
    if (options.load_bpf) {
      f.bpf_load_error = options.load_bpf();
    } else {
      try {
        probes::CudaProbeProgram program(probes::ProbeProgramConfig{});
        f.bpf_load_error = "";
      } catch (const std::exception& e) {
        f.bpf_load_error = e.what();
      }
    }
  }
  f.driver_paths_checked = options.driver_library_paths ? *options.driver_library_paths
                                                        : probes::default_driver_library_paths();
  std::set<std::string> seen;
  for (const auto& p : f.driver_paths_checked) {
    if (::stat(p.c_str(), &st) == 0 && seen.insert(p).second) f.libcuda_found.push_back(p);
  }
  // By name only: doctor reads no tenant's files (the agent judges each
  // mapped file by its symbols, so a renamed copy is covered all the same).
  for (const auto& c : probes::scan_process_maps(options.proc_root)) {
    if (probes::is_cuda_library_name(c.mapping.path) && seen.insert(c.mapping.path).second)
      f.libcuda_found.push_back(c.mapping.path + " (pid " + std::to_string(c.pid) + ")");
  }
  return f;
}

NvmlFacts gather_nvml(const std::string& library) {
  NvmlFacts f;
  f.library = library;
  try {
    auto client = NvmlClient::open(library);
    f.devices = client->device_count();
    f.driver_version = client->driver_version();
    f.simulator = client->is_simulator();
  } catch (const NvmlOpenError& e) {
    f.status = e.status();
    f.open_error = e.what();
  }
  return f;
}

PodResourcesFacts gather_pod_resources(const std::string& socket_path) {
  PodResourcesFacts f;
  f.socket_path = socket_path;
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0) return f;
  f.exists = true;
  f.is_socket = S_ISSOCK(st.st_mode);
  if (!f.is_socket) return f;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    f.connect_error = "path too long for a unix socket";
    return f;
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    f.connect_error = std::strerror(errno);
    return f;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) f.connect_error = std::strerror(errno);
  ::close(fd);
  return f;
}

DcgmFacts gather_dcgm(const std::string& url) {
  DcgmFacts f;
  f.url = url;
  if (url.empty()) return f;
  try {
    DcgmScraper scraper(url);
    auto result = scraper.scrape();
    f.reachable = result.ok;
    f.error = result.error;
    f.dcgm_samples = result.dcgm_samples;
    f.has_profiling = result.has_profiling;
    f.devices = result.extraction.readings.size();
  } catch (const std::exception& e) {
    f.error = e.what();
  }
  return f;
}

std::vector<PlaneReport> run_doctor(const DoctorOptions& options) {
  std::vector<PlaneReport> reports;
  reports.push_back(judge_attribution(gather_attribution(options)));
  reports.push_back(judge_capabilities(read_effective_caps()));
  NvmlFacts nvml = gather_nvml(options.nvml_library);
  InventoryFacts inv{options.nvidia_proc_root, read_proc_inventory(options.nvidia_proc_root).size(), nvml.devices};
  reports.push_back(judge_inventory(inv));
  reports.push_back(judge_nvml(nvml));
  reports.push_back(judge_dcgm(gather_dcgm(options.dcgm_exporter_url)));
  reports.push_back(judge_pod_resources(gather_pod_resources(options.pod_resources_socket)));
  reports.push_back(judge_pins(gather_pins(options.bpf_pin_dir, options.orphaned_pins_after)));
  return reports;
}

// Reasons quote paths and messages a tenant may have named (a container's
// libcuda path, a socket's error): every cell is shown inert.
std::string format_doctor_table(const std::vector<PlaneReport>& reports) {
  size_t w_plane = 5, w_status = 6;
  for (const auto& r : reports) {
    w_plane = std::max(w_plane, inert_text(r.plane).size());
    w_status = std::max(w_status, plane_status_name(r.status).size());
  }
  std::ostringstream out;
  auto row = [&](std::string_view a, std::string_view b, std::string_view c) {
    const std::string plane = inert_text(a);
    out << plane << std::string(w_plane - plane.size() + 2, ' ') << b << std::string(w_status - b.size() + 2, ' ')
        << inert_text(c) << '\n';
  };
  row("PLANE", "STATUS", "REASON");
  row(std::string(w_plane, '-'), std::string(w_status, '-'), "------");
  for (const auto& r : reports) row(r.plane, plane_status_name(r.status), r.reason);
  return out.str();
}

int doctor_exit_code(const std::vector<PlaneReport>& reports) {
  for (const auto& r : reports)
    if (r.plane.rfind("attribution", 0) == 0) return r.status == PlaneStatus::kUnavailable ? 1 : 0;
  return 1;
}

}  // namespace gpuledger::device
