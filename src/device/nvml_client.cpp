#include "device/nvml_client.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "device/nvml_abi.h"

namespace gpuledger::device {

using namespace nvml_abi;

// One pointer per looked-up entry point, named as the function it points to.
struct NvmlClient::Api {
#define GPULEDGER_NVML_MEMBER(name, ret, params) name##_fn name = nullptr;
  GPULEDGER_NVML_FUNCTIONS(GPULEDGER_NVML_MEMBER)
#undef GPULEDGER_NVML_MEMBER

  std::string err(nvmlReturn_t r) const {
    const char* s = nvmlErrorString ? nvmlErrorString(r) : nullptr;
    return (s ? std::string(s) : std::string("NVML error")) + " (" + std::to_string(static_cast<int>(r)) + ")";
  }
};

namespace {

constexpr unsigned kNoInstance = 0xFFFFFFFFu;

// Calls one of the _v3 process queries with the size-negotiation dance; the
// list can grow between calls, so retry a few times.
nvmlReturn_t query_processes(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*), nvmlDevice_t dev,
                             std::vector<nvmlProcessInfo_t>& out) {
  unsigned int count = 0;
  nvmlReturn_t r = fn(dev, &count, nullptr);
  if (r == NVML_SUCCESS) {
    out.clear();
    return r;
  }
  for (int attempt = 0; attempt < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    count = std::min(count + 8, 65536u);
    out.assign(count, nvmlProcessInfo_t{});
    r = fn(dev, &count, out.data());
    if (r == NVML_SUCCESS) out.resize(std::min<size_t>(count, out.size()));
  }
  if (r != NVML_SUCCESS) out.clear();
  return r;
}

struct MemoryReading {
  bool ok = false;
  unsigned long long used = 0, free = 0;
  std::string error;  // empty when the device cannot tell (NOT_SUPPORTED / NOT_FOUND)
};

bool quiet(nvmlReturn_t r) { return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NOT_FOUND; }

// nvmlDeviceGetMemoryInfo_v2 (used without the driver's reservation), else v1
// (drivers before 510, or one that refuses the struct's version).
MemoryReading read_memory(const NvmlClient::Api& a, nvmlDevice_t dev) {
  MemoryReading out;
  nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (a.nvmlDeviceGetMemoryInfo_v2) {
    nvmlMemory_v2_t mem{};
    mem.version = kMemoryV2Version;
    r = a.nvmlDeviceGetMemoryInfo_v2(dev, &mem);
    if (r == NVML_SUCCESS) return {true, mem.used, mem.free, {}};
  }
  if (a.nvmlDeviceGetMemoryInfo) {
    nvmlMemory_t mem{};
    r = a.nvmlDeviceGetMemoryInfo(dev, &mem);
    if (r == NVML_SUCCESS) return {true, mem.used, mem.free, {}};
    if (!quiet(r)) out.error = "nvmlDeviceGetMemoryInfo: " + a.err(r);
  } else if (a.nvmlDeviceGetMemoryInfo_v2 && !quiet(r)) {
    out.error = "nvmlDeviceGetMemoryInfo_v2: " + a.err(r);
  }
  return out;
}

std::string fixed_string(const char* buf, size_t cap) { return std::string(buf, strnlen(buf, cap)); }

}  // namespace

std::string_view nvml_status_name(NvmlStatus status) {
  switch (status) {
    case NvmlStatus::kUp: return "up";
    case NvmlStatus::kDisabled: return "disabled";
    case NvmlStatus::kLibraryAbsent: return "library_absent";
    case NvmlStatus::kLibraryIncomplete: return "library_incomplete";
    case NvmlStatus::kDriverNotLoaded: return "driver_not_loaded";
    case NvmlStatus::kInitFailed: return "init_failed";
  }
  return "unknown";
}

const std::vector<std::string_view>& nvml_symbol_names() {
#define GPULEDGER_NVML_NAME(name, ret, params) #name,
  static const std::vector<std::string_view> names = {GPULEDGER_NVML_FUNCTIONS(GPULEDGER_NVML_NAME)};
#undef GPULEDGER_NVML_NAME
  return names;
}

std::unique_ptr<NvmlClient> NvmlClient::open(const std::string& library) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    throw NvmlOpenError(NvmlStatus::kLibraryAbsent,
                        "cannot load NVML (" + library + "): " + (e ? e : "dlopen failed"));
  }
  std::unique_ptr<NvmlClient> client(new NvmlClient());
  client->handle_ = handle;
  client->path_ = library;
  client->api_ = std::make_unique<Api>();
  Api& a = *client->api_;
#define GPULEDGER_NVML_RESOLVE(name, ret, params) a.name = reinterpret_cast<name##_fn>(::dlsym(handle, #name));
  GPULEDGER_NVML_FUNCTIONS(GPULEDGER_NVML_RESOLVE)
#undef GPULEDGER_NVML_RESOLVE
  client->simulator_ = ::dlsym(handle, "gpuledger_nvml_simulator") != nullptr;
  auto fail = [&](NvmlStatus status, const std::string& why) {
    ::dlclose(handle);
    client->handle_ = nullptr;
    throw NvmlOpenError(status, why);
  };
  if (!a.nvmlInit_v2 || !a.nvmlShutdown || !a.nvmlDeviceGetCount_v2 || !a.nvmlDeviceGetHandleByIndex_v2)
    fail(NvmlStatus::kLibraryIncomplete,
         "NVML library " + library + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2 (driver too old?)");
  nvmlReturn_t r = a.nvmlInit_v2();
  // The library is there and answers: say so, and what stands in the way.
  if (r == NVML_ERROR_DRIVER_NOT_LOADED)
    fail(NvmlStatus::kDriverNotLoaded, "NVML present, kernel driver not loaded: nvmlInit_v2 of " + library +
                                           " returned " + a.err(r));
  if (r != NVML_SUCCESS)
    fail(NvmlStatus::kInitFailed, "NVML present, nvmlInit_v2 of " + library + " failed: " + a.err(r));
  return client;
}

NvmlClient::~NvmlClient() {
  if (!handle_) return;
  if (api_ && api_->nvmlShutdown) api_->nvmlShutdown();
  ::dlclose(handle_);
}

unsigned NvmlClient::device_count() {
  unsigned int n = 0;
  if (api_->nvmlDeviceGetCount_v2(&n) != NVML_SUCCESS) return 0;
  return n;
}

std::string NvmlClient::driver_version() {
  if (!api_->nvmlSystemGetDriverVersion) return {};
  char buf[96] = {};
  if (api_->nvmlSystemGetDriverVersion(buf, sizeof(buf)) != NVML_SUCCESS) return {};
  return fixed_string(buf, sizeof(buf));
}

NvmlPoll NvmlClient::poll(const std::string& hostname) {
  const Api& a = *api_;
  NvmlPoll out;
  unsigned int count = 0;
  if (nvmlReturn_t r = a.nvmlDeviceGetCount_v2(&count); r != NVML_SUCCESS) {
    out.errors.push_back("nvmlDeviceGetCount_v2: " + a.err(r));
    return out;
  }
  for (unsigned i = 0; i < count && i < 1024; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvmlReturn_t r = a.nvmlDeviceGetHandleByIndex_v2(i, &dev); r != NVML_SUCCESS) {
      // GPU lost / no permission: skip that device, keep the others.
      out.errors.push_back("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + "): " + a.err(r));
      continue;
    }
    GpuInfo g;
    g.index = i;
    g.origins = {"nvml"};
    char buf[kDeviceUuidV2BufferSize] = {};
    if (a.nvmlDeviceGetUUID && a.nvmlDeviceGetUUID(dev, buf, sizeof(buf)) == NVML_SUCCESS) g.uuid = fixed_string(buf, sizeof(buf));
    char name[kDeviceNameV2BufferSize] = {};
    if (a.nvmlDeviceGetName && a.nvmlDeviceGetName(dev, name, sizeof(name)) == NVML_SUCCESS) g.model = fixed_string(name, sizeof(name));
    nvmlPciInfo_t pci{};
    if (a.nvmlDeviceGetPciInfo_v3 && a.nvmlDeviceGetPciInfo_v3(dev, &pci) == NVML_SUCCESS)
      g.pci_bus_id = normalize_pci_bus_id(fixed_string(pci.busId, sizeof(pci.busId)));
    unsigned int minor = 0;
    if (a.nvmlDeviceGetMinorNumber && a.nvmlDeviceGetMinorNumber(dev, &minor) == NVML_SUCCESS) g.minor = minor;
    unsigned int mig_current = 0, mig_pending = 0;
    if (a.nvmlDeviceGetMigMode) {
      nvmlReturn_t r = a.nvmlDeviceGetMigMode(dev, &mig_current, &mig_pending);
      if (r == NVML_SUCCESS) g.mig_enabled = mig_current == static_cast<unsigned>(kDeviceMigEnable);
      else if (r == NVML_ERROR_NOT_SUPPORTED) g.mig_enabled = false;  // not MIG-capable
    }

    DeviceReading reading;
    reading.source = Source::kNvml;
    reading.uuid = g.uuid;
    reading.gpu_index = i;
    reading.model = g.model;
    reading.hostname = hostname;
    nvmlUtilization_t util{};
    if (a.nvmlDeviceGetUtilizationRates) {
      nvmlReturn_t r = a.nvmlDeviceGetUtilizationRates(dev, &util);
      if (r == NVML_SUCCESS) reading[DeviceField::kUtilizationRatio] = util.gpu / 100.0;
      else if (!quiet(r)) out.errors.push_back("nvmlDeviceGetUtilizationRates: " + a.err(r));
    }
    if (MemoryReading mem = read_memory(a, dev); mem.ok) {
      reading[DeviceField::kMemoryUsedBytes] = static_cast<double>(mem.used);
      reading[DeviceField::kMemoryFreeBytes] = static_cast<double>(mem.free);
    } else if (!mem.error.empty()) {
      out.errors.push_back(mem.error);
    }
    unsigned int milliwatts = 0;
    if (a.nvmlDeviceGetPowerUsage && a.nvmlDeviceGetPowerUsage(dev, &milliwatts) == NVML_SUCCESS) reading[DeviceField::kPowerWatts] = milliwatts / 1000.0;
    unsigned long long millijoules = 0;
    if (a.nvmlDeviceGetTotalEnergyConsumption && a.nvmlDeviceGetTotalEnergyConsumption(dev, &millijoules) == NVML_SUCCESS)
      reading[DeviceField::kEnergyJoules] = static_cast<double>(millijoules) / 1000.0;

    // Per-process memory: compute contexts, then MPS clients.
    std::map<uint32_t, ProcessReading> procs;
    auto collect = [&](auto fn, bool mps, const char* what) {
      if (!fn) return;
      std::vector<nvmlProcessInfo_t> infos;
      nvmlReturn_t r = query_processes(fn, dev, infos);
      if (r != NVML_SUCCESS) {
        if (!quiet(r)) out.errors.push_back(std::string(what) + ": " + a.err(r));
        return;
      }
      for (const auto& info : infos) {
        auto& p = procs[info.pid];
        p.pid = info.pid;
        p.gpu_uuid = g.uuid;
        p.mps = p.mps || mps;
        if (info.usedGpuMemory != static_cast<unsigned long long>(kValueNotAvailable))
          p.used_bytes = static_cast<uint64_t>(info.usedGpuMemory);
        if (info.gpuInstanceId != kNoInstance) p.gpu_instance_id = info.gpuInstanceId;
        if (info.computeInstanceId != kNoInstance) p.compute_instance_id = info.computeInstanceId;
      }
    };
    collect(a.nvmlDeviceGetComputeRunningProcesses_v3, false, "nvmlDeviceGetComputeRunningProcesses_v3");
    collect(a.nvmlDeviceGetMPSComputeRunningProcesses_v3, true, "nvmlDeviceGetMPSComputeRunningProcesses_v3");

    // Per-process SM utilisation: not supported on MIG-enabled GPUs (and
    // pre-Maxwell); NOT_FOUND means no samples since `last`.
    if (a.nvmlDeviceGetProcessUtilization) {
      unsigned long long last = last_sample_ts_[g.uuid];
      unsigned int n = 0;
      nvmlReturn_t r = a.nvmlDeviceGetProcessUtilization(dev, nullptr, &n, last);
      if (r == NVML_SUCCESS && n > 0) r = NVML_ERROR_INSUFFICIENT_SIZE;  // a size answer without data
      std::vector<nvmlProcessUtilizationSample_t> samples;
      for (int attempt = 0; attempt < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
        n = std::min(n + 8, 65536u);
        samples.assign(n, nvmlProcessUtilizationSample_t{});
        r = a.nvmlDeviceGetProcessUtilization(dev, samples.data(), &n, last);
        if (r == NVML_SUCCESS) samples.resize(std::min<size_t>(n, samples.size()));
      }
      if (r == NVML_SUCCESS) {
        struct Sum {
          double sm = 0, mem = 0;
          unsigned n = 0;
        };
        std::map<uint32_t, Sum> sums;
        unsigned long long newest = last;
        std::vector<ProcessSmTime::Sample> fresh;
        for (const auto& s : samples) {
          if (s.timeStamp <= last && last != 0) continue;
          fresh.push_back({s.pid, s.timeStamp, std::min(s.smUtil, 100u)});
          newest = std::max(newest, s.timeStamp);
          auto& sum = sums[s.pid];
          sum.sm += std::min(s.smUtil, 100u);
          sum.mem += std::min(s.memUtil, 100u);
          ++sum.n;
        }
        last_sample_ts_[g.uuid] = newest;
        sm_time_.add(g.uuid, last, fresh);
        g.process_samples_split = sm_time_.splits_processes(g.uuid);
        for (const auto& [pid, sum] : sums) {
          auto& p = procs[pid];
          p.pid = pid;
          p.gpu_uuid = g.uuid;
          p.sm_util_ratio = sum.sm / sum.n / 100.0;
          p.mem_util_ratio = sum.mem / sum.n / 100.0;
        }
      } else if (!quiet(r)) {
        out.errors.push_back("nvmlDeviceGetProcessUtilization: " + a.err(r));
      }
      // NOT_FOUND: no samples since `last`, which a GPU that samples answers when idle.
      g.process_samples = r == NVML_SUCCESS || r == NVML_ERROR_NOT_FOUND;
      if (!*g.process_samples) g.process_samples_error = a.err(r);
    } else {
      g.process_samples = false;
      g.process_samples_error = "this NVML has no nvmlDeviceGetProcessUtilization";
    }
    // Every process with SM time to date, sampled this poll or not (one that
    // exited since keeps its total a while, so its last samples are not lost).
    for (const auto& [pid, total] : sm_time_.totals(g.uuid))
      out.process_sm.push_back({g.uuid, pid, total, sm_time_.last_sample_us(g.uuid, pid)});
    for (auto& [pid, p] : procs) out.processes.push_back(std::move(p));
    out.gpus.push_back(std::move(g));
    out.readings.push_back(std::move(reading));
  }
  return out;
}

}  // namespace gpuledger::device
