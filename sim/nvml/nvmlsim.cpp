// gpuledger NVML simulator: a stand-in libnvidia-ml.so.1 with scripted
// devices and processes, for tests and demos on machines without a GPU. It is
// NOT NVIDIA's library; it exports the marker symbol gpuledger_nvml_simulator
// so the agent can say which one it loaded.
//
// The script is a JSON file named by GPULEDGER_NVML_SIM_CONFIG, read at
// nvmlInit_v2 and re-read whenever its modification time changes (so a test
// can change the processes under a running agent):
// {
//   "driver_version": "550.90.07",
//   "init_error": 9,                      // optional: nvmlInit_v2 returns this
//   "devices": [{
//     "uuid": "GPU-...", "name": "NVIDIA A100-SXM4-80GB",
//     "pci_bus_id": "00000000:07:00.0", "minor": 0,
//     "mig_mode": 0 | 1 | "not_supported",
//     "utilization": {"gpu": 97, "memory": 41} | "not_supported",
//     "memory": {"total": 85899345920, "used": 42949672960,
//                "reserved": 0},                 // _v2 only; v1's used includes it
//     "power_mw": 312614,                 // absent: NOT_SUPPORTED
//     "energy_mj": 123456789,             // total energy counter; absent: NOT_SUPPORTED
//     "compute_processes": [{"pid": 4242, "used_bytes": 1073741824 | null,
//                            "gpu_instance_id": 1, "compute_instance_id": 0}],
//     "mps_processes": [ ...same... ],
//     "mps_pipe_directory": "/tmp/mps",   // a simulated MPS server's (sim/mps): while
//                                         // it runs, the compute list adds the server
//                                         // (with the memory it holds) and its live
//                                         // clients (memory N/A), and the MPS list its
//                                         // clients, as NVML does under MPS
//     "process_utilization": [{"pid": 4242, "sm": 55, "mem": 20}] | "not_supported",
//     "work_directory": "/tmp/work",      // the driver simulator's CUDASIM_WORK_DIR: per-process
//                                         // SM utilisation (each sample: the share of the time
//                                         // since the previous sample the process's work ran)
//                                         // and the device's ("utilization".gpu: their union)
//                                         // derived from the work the processes really ran,
//                                         // instead of "process_utilization" and a fixed gpu
//     "process_samples": "per_process" | "one_per_period",
//                                         // per_process (default): each read gives every process
//                                         // a sample, all at one instant. one_per_period: as
//                                         // NVIDIA's driver 580 on an H200 (docs/gpu-validation.md),
//                                         // one sample per 200 ms period for the whole GPU, given
//                                         // to one process (derived: the one whose work covered
//                                         // most of the period; scripted: the listed processes in
//                                         // turn), its smUtil the whole GPU's utilisation
//     "lost": false                       // true: handle lookups return GPU_IS_LOST
//   }]
// }
// Per-process utilisation on a MIG-enabled device is NOT_SUPPORTED, as on
// real hardware.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "device/nvml_abi.h"

using namespace gpuledger::nvml_abi;

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

// The opaque handle type of nvml.h; here, an index into the scripted devices.
struct gpuledger::nvml_abi::nvmlDevice_st {
  unsigned index;
};

namespace {

struct SimProcess {
  unsigned pid = 0;
  unsigned long long used = 0;
  unsigned gi = 0xFFFFFFFFu, ci = 0xFFFFFFFFu;
};
struct SimUtil {
  unsigned pid = 0, sm = 0, mem = 0, enc = 0, dec = 0;
};
struct SimDevice {
  std::string mps_dir;
  std::string uuid, name, bus_id;
  unsigned minor = 0;
  int mig = 0;  // -1 not supported
  bool util_supported = true;
  unsigned util_gpu = 0, util_mem = 0;
  unsigned long long mem_total = 0, mem_used = 0, mem_reserved = 0;
  long long power_mw = -1;
  long long energy_mj = -1;
  std::vector<SimProcess> compute, mps;
  bool proc_util_supported = true;
  std::vector<SimUtil> proc_util;
  std::string work_dir;  // derived utilisation (see the top)
  bool one_per_period = false;  // "process_samples": "one_per_period"
  bool lost = false;
};

// The instant (CLOCK_MONOTONIC ns) of each device's previous derived sample, by
// device index, kept across reloads of the script.
std::map<unsigned, unsigned long long> g_proc_sampled_at, g_util_sampled_at;

unsigned long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000'000ULL + static_cast<unsigned long long>(ts.tv_nsec);
}

using Intervals = std::vector<std::pair<unsigned long long, unsigned long long>>;

// Sorted and merged: the time covered once however many streams overlap.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

unsigned long long covered(const Intervals& merged_intervals, unsigned long long from, unsigned long long to) {
  unsigned long long sum = 0;
  for (const auto& [a, b] : merged_intervals) {
    const unsigned long long lo = std::max(a, from), hi = std::min(b, to);
    if (hi > lo) sum += hi - lo;
  }
  return sum;
}

// The work of every process that logged some in `dir` (files named by pid).
std::map<unsigned, Intervals> read_work(const std::string& dir) {
  std::map<unsigned, Intervals> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path());
    Intervals& work = out[static_cast<unsigned>(std::stoul(name))];
    unsigned long long a = 0, b = 0;
    while (in >> a >> b)
      if (b > a) work.emplace_back(a, b);
    work = merged(std::move(work));
  }
  return out;
}

// The share (percent, 0..100) of (from, to] each process's work covered.
std::map<unsigned, unsigned> derived_process_util(const std::string& dir, unsigned long long from,
                                                  unsigned long long to) {
  std::map<unsigned, unsigned> out;
  if (to <= from) return out;
  for (const auto& [pid, work] : read_work(dir)) {
    const unsigned long long ns = covered(work, from, to);
    if (ns > 0) out[pid] = static_cast<unsigned>(std::min<unsigned long long>(100, (ns * 100 + (to - from) / 2) / (to - from)));
  }
  return out;
}

unsigned derived_device_util(const std::string& dir, unsigned long long from, unsigned long long to) {
  if (to <= from) return 0;
  Intervals all;
  for (auto& [pid, work] : read_work(dir)) all.insert(all.end(), work.begin(), work.end());
  const unsigned long long ns = covered(merged(std::move(all)), from, to);
  return static_cast<unsigned>(std::min<unsigned long long>(100, (ns * 100 + (to - from) / 2) / (to - from)));
}

constexpr size_t kMaxDevices = 64;

std::mutex g_mu;
bool g_initialised = false;
std::vector<SimDevice> g_devices;
std::string g_driver = "0.0.0-gpuledger-sim";
int g_init_error = 0;
struct timespec g_mtime {};
nvmlDevice_st g_handles[kMaxDevices];

std::vector<SimProcess> parse_processes(const nlohmann::json& j) {
  std::vector<SimProcess> out;
  if (!j.is_array()) return out;
  for (const auto& p : j) {
    SimProcess sp;
    sp.pid = p.value("pid", 0u);
    if (p.contains("used_bytes") && p["used_bytes"].is_null()) sp.used = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
    else sp.used = p.value("used_bytes", 0ULL);
    sp.gi = p.value("gpu_instance_id", 0xFFFFFFFFu);
    sp.ci = p.value("compute_instance_id", 0xFFFFFFFFu);
    out.push_back(sp);
  }
  return out;
}

// Loads (or reloads) the script; false when it cannot be read.
bool load_locked(bool force) {
  const char* path = std::getenv("GPULEDGER_NVML_SIM_CONFIG");
  if (!path || !*path) return false;
  struct stat st {};
  if (::stat(path, &st) != 0) return false;
  if (!force && st.st_mtim.tv_sec == g_mtime.tv_sec && st.st_mtim.tv_nsec == g_mtime.tv_nsec) return true;
  try {
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in);
    std::vector<SimDevice> devices;
    for (const auto& d : j.value("devices", nlohmann::json::array())) {
      if (devices.size() == kMaxDevices) break;
      SimDevice sd;
      sd.uuid = d.value("uuid", "GPU-00000000-0000-0000-0000-" + std::to_string(devices.size()));
      sd.name = d.value("name", "gpuledger simulated GPU");
      sd.bus_id = d.value("pci_bus_id", "00000000:00:00.0");
      sd.minor = d.value("minor", static_cast<unsigned>(devices.size()));
      if (d.contains("mig_mode") && d["mig_mode"].is_string()) sd.mig = -1;
      else sd.mig = d.value("mig_mode", 0);
      if (d.contains("utilization") && d["utilization"].is_object()) {
        sd.util_gpu = d["utilization"].value("gpu", 0u);
        sd.util_mem = d["utilization"].value("memory", 0u);
      } else if (d.contains("utilization")) {
        sd.util_supported = false;
      }
      if (d.contains("memory")) {
        sd.mem_total = d["memory"].value("total", 0ULL);
        sd.mem_used = d["memory"].value("used", 0ULL);
        sd.mem_reserved = d["memory"].value("reserved", 0ULL);
      }
      sd.power_mw = d.value("power_mw", -1LL);
      sd.energy_mj = d.value("energy_mj", -1LL);
      sd.compute = parse_processes(d.value("compute_processes", nlohmann::json::array()));
      sd.mps = parse_processes(d.value("mps_processes", nlohmann::json::array()));
      sd.mps_dir = d.value("mps_pipe_directory", std::string());
      if (d.contains("process_utilization") && d["process_utilization"].is_array()) {
        for (const auto& u : d["process_utilization"])
          sd.proc_util.push_back({u.value("pid", 0u), u.value("sm", 0u), u.value("mem", 0u), u.value("enc", 0u),
                                  u.value("dec", 0u)});
      } else if (d.contains("process_utilization")) {
        sd.proc_util_supported = false;
      }
      sd.work_dir = d.value("work_directory", std::string());
      sd.one_per_period = d.value("process_samples", std::string("per_process")) == "one_per_period";
      sd.lost = d.value("lost", false);
      devices.push_back(std::move(sd));
    }
    g_devices = std::move(devices);
    g_driver = j.value("driver_version", std::string("0.0.0-gpuledger-sim"));
    g_init_error = j.value("init_error", 0);
    g_mtime = st.st_mtim;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

SimDevice* device_locked(nvmlDevice_t dev) {
  if (!g_initialised || !dev) return nullptr;
  load_locked(false);
  if (dev->index >= g_devices.size()) return nullptr;
  return &g_devices[dev->index];
}

nvmlReturn_t copy_string(const std::string& s, char* buf, unsigned int length) {
  if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t processes(const std::vector<SimProcess>& list, unsigned int* count, nvmlProcessInfo_t* infos) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (list.empty()) {
    *count = 0;
    return NVML_SUCCESS;
  }
  if (!infos || *count < list.size()) {
    *count = static_cast<unsigned>(list.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < list.size(); ++i) infos[i] = {list[i].pid, list[i].used, list[i].gi, list[i].ci};
  *count = static_cast<unsigned>(list.size());
  return NVML_SUCCESS;
}

unsigned long long read_number(const std::string& path) {
  std::ifstream in(path);
  unsigned long long v = 0;
  in >> v;
  return v;
}

bool alive(unsigned pid) {
  struct stat st {};
  return pid > 0 && ::stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0;
}

// The server and its live clients while a simulated MPS server runs in dir.
void add_mps(const std::string& dir, std::vector<SimProcess>& compute, std::vector<SimProcess>& clients) {
  if (dir.empty()) return;
  auto server = static_cast<unsigned>(read_number(dir + "/server.pid"));
  if (!alive(server)) return;
  compute.push_back({server, read_number(dir + "/server.bytes"), 0xFFFFFFFFu, 0xFFFFFFFFu});
  std::ifstream in(dir + "/clients");
  for (unsigned pid = 0; in >> pid;)
    if (alive(pid)) clients.push_back({pid, ~0ULL, 0xFFFFFFFFu, 0xFFFFFFFFu});
  compute.insert(compute.end(), clients.begin(), clients.end());
}

}  // namespace

SIM_EXPORT const char gpuledger_nvml_simulator[] = "gpuledger NVML simulator 1";

SIM_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard lock(g_mu);
  if (!load_locked(true)) return NVML_ERROR_DRIVER_NOT_LOADED;
  if (g_init_error != 0) return static_cast<nvmlReturn_t>(g_init_error);
  for (unsigned i = 0; i < kMaxDevices; ++i) g_handles[i].index = i;
  g_initialised = true;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard lock(g_mu);
  if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
  g_initialised = false;
  return NVML_SUCCESS;
}

SIM_EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded (gpuledger NVML simulator: GPULEDGER_NVML_SIM_CONFIG unset or unreadable)";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::lock_guard lock(g_mu);
  if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
  return copy_string(g_driver, version, length);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  std::lock_guard lock(g_mu);
  if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  load_locked(false);
  *count = static_cast<unsigned>(g_devices.size());
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  std::lock_guard lock(g_mu);
  if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
  if (!device || index >= g_devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (g_devices[index].lost) return NVML_ERROR_GPU_IS_LOST;
  *device = &g_handles[index];
  return NVML_SUCCESS;
}

#define SIM_DEVICE()                                  \
  std::lock_guard lock(g_mu);                         \
  SimDevice* d = device_locked(device);               \
  if (!g_initialised) return NVML_ERROR_UNINITIALIZED; \
  if (!d) return NVML_ERROR_INVALID_ARGUMENT

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  SIM_DEVICE();
  return copy_string(d->uuid, uuid, length);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  SIM_DEVICE();
  return copy_string(d->name, name, length);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  SIM_DEVICE();
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(pci, 0, sizeof(*pci));
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  std::sscanf(d->bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  pci->pciDeviceId = 0x20B510DE;
  std::snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", domain, bus, dev, fn);
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X", domain & 0xFFFF, bus, dev, fn);
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  SIM_DEVICE();
  if (!minor) return NVML_ERROR_INVALID_ARGUMENT;
  *minor = d->minor;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending) {
  SIM_DEVICE();
  if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->mig < 0) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = static_cast<unsigned>(d->mig);
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  SIM_DEVICE();
  if (!utilization) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->util_supported) return NVML_ERROR_NOT_SUPPORTED;
  utilization->gpu = d->util_gpu;
  if (!d->work_dir.empty()) {
    // Since the previous reading (the first: the last second).
    const unsigned index = static_cast<unsigned>(d - g_devices.data());
    const unsigned long long now = monotonic_ns();
    auto [at, first] = g_util_sampled_at.try_emplace(index, now - 1'000'000'000ULL);
    utilization->gpu = derived_device_util(d->work_dir, at->second, now);
    at->second = now;
  }
  utilization->memory = d->util_mem;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  SIM_DEVICE();
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long held = d->mem_used + d->mem_reserved;
  memory->total = d->mem_total;
  memory->used = held;
  memory->free = d->mem_total > held ? d->mem_total - held : 0;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  SIM_DEVICE();
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != kMemoryV2Version) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  unsigned long long held = d->mem_used + d->mem_reserved;
  memory->total = d->mem_total;
  memory->reserved = d->mem_reserved;
  memory->used = d->mem_used;
  memory->free = d->mem_total > held ? d->mem_total - held : 0;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  SIM_DEVICE();
  if (!power) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->power_mw < 0) return NVML_ERROR_NOT_SUPPORTED;
  *power = static_cast<unsigned>(d->power_mw);
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  SIM_DEVICE();
  if (!energy) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->energy_mj < 0) return NVML_ERROR_NOT_SUPPORTED;
  *energy = static_cast<unsigned long long>(d->energy_mj);
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                nvmlProcessInfo_t* infos) {
  SIM_DEVICE();
  auto compute = d->compute;
  std::vector<SimProcess> clients;
  add_mps(d->mps_dir, compute, clients);
  return processes(compute, infoCount, infos);
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                   nvmlProcessInfo_t* infos) {
  SIM_DEVICE();
  auto mps = d->mps, compute = d->compute;
  add_mps(d->mps_dir, compute, mps);
  return processes(mps, infoCount, infos);
}

// A driver that samples one process per period: its periods are 200 ms of
// CLOCK_MONOTONIC, each sampled once it has ended. The whole periods that end
// in (from, to].
constexpr unsigned long long kSamplePeriodNs = 200'000'000ULL;
struct Period {
  unsigned long long from, to;
};
std::vector<Period> periods(unsigned long long from, unsigned long long to) {
  std::vector<Period> out;
  for (unsigned long long end = (from / kSamplePeriodNs + 1) * kSamplePeriodNs; end <= to; end += kSamplePeriodNs)
    out.push_back({end - kSamplePeriodNs, end});
  return out;
}

SIM_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                                        unsigned int* processSamplesCount,
                                                        unsigned long long lastSeenTimeStamp) {
  SIM_DEVICE();
  if (!processSamplesCount) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->mig == 1 || !d->proc_util_supported) return NVML_ERROR_NOT_SUPPORTED;
  // Stamped in CPU time, microseconds, as NVML does.
  unsigned long long now = static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  std::vector<nvmlProcessUtilizationSample_t> fresh;
  std::optional<unsigned long long> derived_to;  // the derived samples' end: their cursor, once read
  const unsigned index = static_cast<unsigned>(d - g_devices.data());
  const unsigned long long mono = monotonic_ns();
  if (!d->work_dir.empty()) {
    // Derived from the work the processes ran since the previous read (the
    // first: the last second), advanced only when the samples are read.
    const unsigned long long from = g_proc_sampled_at.try_emplace(index, mono - 1'000'000'000ULL).first->second;
    derived_to = mono;
    if (d->one_per_period) {
      derived_to = from;
      for (const auto& p : periods(from, mono)) {
        derived_to = p.to;
        const auto shares = derived_process_util(d->work_dir, p.from, p.to);
        if (shares.empty()) continue;
        const auto top = std::max_element(shares.begin(), shares.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        fresh.push_back({top->first, now - (mono - p.to) / 1000, derived_device_util(d->work_dir, p.from, p.to), 0, 0, 0});
      }
    } else {
      for (const auto& [pid, sm] : derived_process_util(d->work_dir, from, mono)) fresh.push_back({pid, now, sm, 0, 0, 0});
    }
  } else if (d->one_per_period) {
    // The listed processes in turn, two rounds, one per period: each sample
    // the whole GPU's utilisation (their sum).
    unsigned sum = 0;
    for (const auto& u : d->proc_util) sum += u.sm;
    const size_t n = d->proc_util.size() * 2;
    for (size_t i = 0; i < n; ++i) {
      const auto& u = d->proc_util[i % d->proc_util.size()];
      fresh.push_back({u.pid, now - (n - 1 - i) * 200'000ULL, std::min(sum, 100u), u.mem, u.enc, u.dec});
    }
  } else {
    for (const auto& u : d->proc_util) fresh.push_back({u.pid, now, u.sm, u.mem, u.enc, u.dec});
  }
  std::erase_if(fresh, [&](const auto& s) { return s.timeStamp <= lastSeenTimeStamp; });
  if (fresh.empty()) {
    *processSamplesCount = 0;
    return NVML_ERROR_NOT_FOUND;
  }
  if (!utilization || *processSamplesCount < fresh.size()) {
    *processSamplesCount = static_cast<unsigned>(fresh.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (derived_to) g_proc_sampled_at[index] = *derived_to;
  std::copy(fresh.begin(), fresh.end(), utilization);
  *processSamplesCount = static_cast<unsigned>(fresh.size());
  return NVML_SUCCESS;
}

// Every entry point the agent's client looks up is defined here, exported
// (SIM_EXPORT) under its NVML name, with the client's pointer type (itself
// checked against the real nvml.h by tests/device/nvml_abi_check_test.cpp).
#define SIM_IMPLEMENTS(name, ret, params) \
  static_assert(std::is_same_v<decltype(&::name), name##_fn>, "the simulator's " #name " differs from the client's");
GPULEDGER_NVML_FUNCTIONS(SIM_IMPLEMENTS)
#undef SIM_IMPLEMENTS
