#pragma once
// NVML, loaded at run time: dlopen(libnvidia-ml.so.1) + nvmlInit_v2. The agent
// links nothing of NVIDIA's, so it builds and runs where there is no NVIDIA
// software; then NvmlClient::open fails with a reason and the NVML plane is off.
// The failure says which case it is (NvmlStatus): no library, a library
// without NVML's entry points, NVML present but the NVIDIA kernel driver not
// loaded (a node with the user-space driver and no GPU, or before the module
// loads), or another nvmlInit_v2 error (no permission, version mismatch).
//
// Only nvmlInit_v2, nvmlShutdown, nvmlErrorString, nvmlDeviceGetCount_v2 and
// nvmlDeviceGetHandleByIndex_v2 are required; every other entry point is
// optional and a missing one (old driver) or NVML_ERROR_NOT_SUPPORTED (e.g.
// per-process utilisation on MIG) leaves that reading absent.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

#include "device/device_snapshot.h"
#include "device/nvml_status.h"
#include "device/process_sm_time.h"

namespace gpuledger::device {

inline constexpr const char* kDefaultNvmlLibrary = "libnvidia-ml.so.1";

struct NvmlPoll {
  std::vector<GpuInfo> gpus;
  std::vector<DeviceReading> readings;    // source nvml, one per device
  std::vector<ProcessReading> processes;  // compute + MPS clients, host pids
  std::vector<ProcessSmReading> process_sm;  // SM time to date per process (process_sm_time.h)
  std::vector<std::string> errors;        // per-call failures other than NOT_SUPPORTED / NOT_FOUND
};

// Why NvmlClient::open failed; what() is one sentence naming the library.
class NvmlOpenError : public Error {
 public:
  NvmlOpenError(NvmlStatus status, const std::string& message) : Error(message), status_(status) {}
  NvmlStatus status() const { return status_; }

 private:
  NvmlStatus status_;
};

// The entry points the client looks up by name, as NVML exports them.
const std::vector<std::string_view>& nvml_symbol_names();

class NvmlClient {
 public:
  // dlopen + nvmlInit_v2; throws NvmlOpenError with the case and the reason
  // (dlerror text, or nvmlErrorString of the init result).
  static std::unique_ptr<NvmlClient> open(const std::string& library = kDefaultNvmlLibrary);
  ~NvmlClient();  // nvmlShutdown + dlclose
  NvmlClient(const NvmlClient&) = delete;
  NvmlClient& operator=(const NvmlClient&) = delete;

  // Inventory, device readings and processes, one pass over every device.
  // Per-process SM utilisation is the mean of the samples NVML collected since
  // the previous poll (first poll: everything in NVML's buffer).
  NvmlPoll poll(const std::string& hostname);
  unsigned device_count();
  std::string driver_version();
  // True when the loaded library is gpuledger's NVML simulator (sim/nvml).
  bool is_simulator() const { return simulator_; }
  const std::string& path() const { return path_; }

  struct Api;

 private:
  NvmlClient() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  std::string path_;
  bool simulator_ = false;
  std::map<std::string, unsigned long long> last_sample_ts_;  // per GPU uuid
  ProcessSmTime sm_time_;  // cumulative SM-seconds per (GPU uuid, pid)
};

}  // namespace gpuledger::device
