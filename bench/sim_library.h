#pragma once
// The CUDA driver simulator as the benchmark uses it: a private copy of
// libcuda.so.1, loaded with dlopen. Uprobes are per file (inode), so probes
// someone else attaches to build/sim/lib/libcuda.so.1 while the benchmark runs
// (tests, a demo) cannot land on the calls being timed, and a rebuild of the
// library cannot pull it away mid-run. The copy is deliberately not named
// libcuda.so*: an agent with discovery on (a demo, a test) would otherwise
// find it in this process's maps and probe it too -- which happened, and
// turned "no probe" into a probed call for whole rounds.
#include <string>

#include "cuda_sim.h"
#include "private_copy.h"

namespace gpuledger::bench {

// The entry points the benchmark calls, resolved from the private copy.
struct CudaApi {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuMemcpyHtoD_v2) memcpy_htod = nullptr;
  decltype(&::cuMemcpyHtoDAsync_v2) memcpy_htod_async = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
};

class SimLibrary {
 public:
  explicit SimLibrary(const std::string& original);  // copies and loads; throws Error
  SimLibrary(const SimLibrary&) = delete;
  SimLibrary& operator=(const SimLibrary&) = delete;

  const std::string& path() const { return copy_.path(); }  // the private copy: probe this one
  const CudaApi& api() const { return api_; }

 private:
  PrivateCopy copy_;
  CudaApi api_;
};

// What a thread needs before the hot calls succeed: a current context, a
// kernel to launch and a device buffer to copy into. Call again in a forked
// child (the context stack is per thread; a fresh cuInit is a no-op).
struct CudaSession {
  const CudaApi* api = nullptr;
  CUfunction kernel = nullptr;
  CUdeviceptr buffer = 0;
  static constexpr size_t kCopyBytes = 4096;
  char host[kCopyBytes] = {};

  explicit CudaSession(const CudaApi& api);  // throws Error
  CUresult launch() const {
    return api->launch_kernel(kernel, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
  }
  CUresult copy() const { return api->memcpy_htod(buffer, host, kCopyBytes); }
  CUresult copy_async() const { return api->memcpy_htod_async(buffer, host, kCopyBytes, nullptr); }
  CUresult sync() const { return api->stream_synchronize(nullptr); }
};

}  // namespace gpuledger::bench
