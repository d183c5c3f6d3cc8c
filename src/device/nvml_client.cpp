#include "device/nvml_client.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "device/nvml_abi.h"

namespace gpuledger::device {

struct NvmlClient::Api {
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlDeviceGetCount_v2_fn count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn handle = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetPciInfo_v3_fn pci = nullptr;
  nvmlDeviceGetMinorNumber_fn minor = nullptr;
  nvmlDeviceGetMigMode_fn mig = nullptr;
  nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetPowerUsage_fn power = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_fn energy = nullptr;
  nvmlDeviceGetComputeRunningProcesses_v3_fn compute = nullptr;
  nvmlDeviceGetMPSComputeRunningProcesses_v3_fn mps = nullptr;
  nvmlDeviceGetProcessUtilization_fn process_util = nullptr;

  std::string err(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return (s ? std::string(s) : std::string("NVML error")) + " (" + std::to_string(static_cast<int>(r)) + ")";
  }
};

namespace {

template <typename Fn>
void resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
}

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

std::string fixed_string(const char* buf, size_t cap) { return std::string(buf, strnlen(buf, cap)); }

}  // namespace

std::unique_ptr<NvmlClient> NvmlClient::open(const std::string& library) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    throw Error("cannot load NVML (" + library + "): " + (e ? e : "dlopen failed"));
  }
  std::unique_ptr<NvmlClient> client(new NvmlClient());
  client->handle_ = handle;
  client->path_ = library;
  client->api_ = std::make_unique<Api>();
  Api& a = *client->api_;
  resolve(handle, "nvmlInit_v2", a.init);
  resolve(handle, "nvmlShutdown", a.shutdown);
  resolve(handle, "nvmlErrorString", a.error_string);
  resolve(handle, "nvmlSystemGetDriverVersion", a.driver_version);
  resolve(handle, "nvmlDeviceGetCount_v2", a.count);
  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", a.handle);
  resolve(handle, "nvmlDeviceGetUUID", a.uuid);
  resolve(handle, "nvmlDeviceGetName", a.name);
  resolve(handle, "nvmlDeviceGetPciInfo_v3", a.pci);
  resolve(handle, "nvmlDeviceGetMinorNumber", a.minor);
  resolve(handle, "nvmlDeviceGetMigMode", a.mig);
  resolve(handle, "nvmlDeviceGetUtilizationRates", a.utilization);
  resolve(handle, "nvmlDeviceGetMemoryInfo", a.memory);
  resolve(handle, "nvmlDeviceGetPowerUsage", a.power);
  resolve(handle, "nvmlDeviceGetTotalEnergyConsumption", a.energy);
  resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", a.compute);
  resolve(handle, "nvmlDeviceGetMPSComputeRunningProcesses_v3", a.mps);
  resolve(handle, "nvmlDeviceGetProcessUtilization", a.process_util);
  client->simulator_ = ::dlsym(handle, "gpuledger_nvml_simulator") != nullptr;
  if (!a.init || !a.shutdown || !a.count || !a.handle) {
    ::dlclose(handle);
    client->handle_ = nullptr;
    throw Error("NVML library " + library + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2 (driver too old?)");
  }
  nvmlReturn_t r = a.init();
  if (r != NVML_SUCCESS) {
    std::string why = a.err(r);
    ::dlclose(handle);
    client->handle_ = nullptr;
    throw Error("nvmlInit_v2 failed: " + why);
  }
  return client;
}

NvmlClient::~NvmlClient() {
  if (!handle_) return;
  if (api_ && api_->shutdown) api_->shutdown();
  ::dlclose(handle_);
}

unsigned NvmlClient::device_count() {
  unsigned int n = 0;
  if (api_->count(&n) != NVML_SUCCESS) return 0;
  return n;
}

std::string NvmlClient::driver_version() {
  if (!api_->driver_version) return {};
  char buf[96] = {};
  if (api_->driver_version(buf, sizeof(buf)) != NVML_SUCCESS) return {};
  return fixed_string(buf, sizeof(buf));
}

NvmlPoll NvmlClient::poll(const std::string& hostname) {
  const Api& a = *api_;
  NvmlPoll out;
  unsigned int count = 0;
  if (nvmlReturn_t r = a.count(&count); r != NVML_SUCCESS) {
    out.errors.push_back("nvmlDeviceGetCount_v2: " + a.err(r));
    return out;
  }
  auto quiet = [](nvmlReturn_t r) { return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NOT_FOUND; };
  for (unsigned i = 0; i < count && i < 1024; ++i) {
    nvmlDevice_t dev = nullptr;
    if (nvmlReturn_t r = a.handle(i, &dev); r != NVML_SUCCESS) {
      // GPU lost / no permission: skip that device, keep the others.
      out.errors.push_back("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + "): " + a.err(r));
      continue;
    }
    GpuInfo g;
    g.index = i;
    g.origins = {"nvml"};
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (a.uuid && a.uuid(dev, buf, sizeof(buf)) == NVML_SUCCESS) g.uuid = fixed_string(buf, sizeof(buf));
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (a.name && a.name(dev, name, sizeof(name)) == NVML_SUCCESS) g.model = fixed_string(name, sizeof(name));
    nvmlPciInfo_t pci{};
    if (a.pci && a.pci(dev, &pci) == NVML_SUCCESS)
      g.pci_bus_id = normalize_pci_bus_id(fixed_string(pci.busId, sizeof(pci.busId)));
    unsigned int minor = 0;
    if (a.minor && a.minor(dev, &minor) == NVML_SUCCESS) g.minor = minor;
    unsigned int mig_current = 0, mig_pending = 0;
    if (a.mig) {
      nvmlReturn_t r = a.mig(dev, &mig_current, &mig_pending);
      if (r == NVML_SUCCESS) g.mig_enabled = mig_current == NVML_DEVICE_MIG_ENABLE;
      else if (r == NVML_ERROR_NOT_SUPPORTED) g.mig_enabled = false;  // not MIG-capable
    }

    DeviceReading reading;
    reading.source = Source::kNvml;
    reading.uuid = g.uuid;
    reading.gpu_index = i;
    reading.model = g.model;
    reading.hostname = hostname;
    nvmlUtilization_t util{};
    if (a.utilization) {
      nvmlReturn_t r = a.utilization(dev, &util);
      if (r == NVML_SUCCESS) reading[DeviceField::kUtilizationRatio] = util.gpu / 100.0;
      else if (!quiet(r)) out.errors.push_back("nvmlDeviceGetUtilizationRates: " + a.err(r));
    }
    nvmlMemory_t mem{};
    if (a.memory) {
      nvmlReturn_t r = a.memory(dev, &mem);
      if (r == NVML_SUCCESS) {
        reading[DeviceField::kMemoryUsedBytes] = static_cast<double>(mem.used);
        reading[DeviceField::kMemoryFreeBytes] = static_cast<double>(mem.free);
      } else if (!quiet(r)) {
        out.errors.push_back("nvmlDeviceGetMemoryInfo: " + a.err(r));
      }
    }
    unsigned int milliwatts = 0;
    if (a.power && a.power(dev, &milliwatts) == NVML_SUCCESS) reading[DeviceField::kPowerWatts] = milliwatts / 1000.0;
    unsigned long long millijoules = 0;
    if (a.energy && a.energy(dev, &millijoules) == NVML_SUCCESS)
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
        if (info.usedGpuMemory != static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE))
          p.used_bytes = static_cast<uint64_t>(info.usedGpuMemory);
        if (info.gpuInstanceId != kNoInstance) p.gpu_instance_id = info.gpuInstanceId;
        if (info.computeInstanceId != kNoInstance) p.compute_instance_id = info.computeInstanceId;
      }
    };
    collect(a.compute, false, "nvmlDeviceGetComputeRunningProcesses_v3");
    collect(a.mps, true, "nvmlDeviceGetMPSComputeRunningProcesses_v3");

    // Per-process SM utilisation: not supported on MIG-enabled GPUs (and
    // pre-Maxwell); NOT_FOUND means no samples since `last`.
    if (a.process_util) {
      unsigned long long last = last_sample_ts_[g.uuid];
      unsigned int n = 0;
      nvmlReturn_t r = a.process_util(dev, nullptr, &n, last);
      if (r == NVML_SUCCESS && n > 0) r = NVML_ERROR_INSUFFICIENT_SIZE;  // a size answer without data
      std::vector<nvmlProcessUtilizationSample_t> samples;
      for (int attempt = 0; attempt < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
        n = std::min(n + 8, 65536u);
        samples.assign(n, nvmlProcessUtilizationSample_t{});
        r = a.process_util(dev, samples.data(), &n, last);
        if (r == NVML_SUCCESS) samples.resize(std::min<size_t>(n, samples.size()));
      }
      if (r == NVML_SUCCESS) {
        struct Sum {
          double sm = 0, mem = 0;
          unsigned n = 0;
        };
        std::map<uint32_t, Sum> sums;
        unsigned long long newest = last;
        for (const auto& s : samples) {
          if (s.timeStamp <= last && last != 0) continue;
          newest = std::max(newest, s.timeStamp);
          auto& sum = sums[s.pid];
          sum.sm += std::min(s.smUtil, 100u);
          sum.mem += std::min(s.memUtil, 100u);
          ++sum.n;
        }
        last_sample_ts_[g.uuid] = newest;
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
    }
    for (auto& [pid, p] : procs) out.processes.push_back(std::move(p));
    out.gpus.push_back(std::move(g));
    out.readings.push_back(std::move(reading));
  }
  return out;
}

}  // namespace gpuledger::device
