#include "sim_library.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.h"

namespace gpuledger::bench {
namespace fs = std::filesystem;

namespace {

template <typename Fn>
void resolve(const PrivateCopy& lib, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(lib.symbol(name));
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(std::string(what) + " failed with CUresult " + std::to_string(r));
}

}  // namespace

SimLibrary::SimLibrary(const std::string& original) : copy_(original, "gpuledger-bench-cuda.so") {
  resolve(copy_, "cuInit", api_.init);
  resolve(copy_, "cuDeviceGet", api_.device_get);
  resolve(copy_, "cuDevicePrimaryCtxRetain", api_.primary_ctx_retain);
  resolve(copy_, "cuCtxSetCurrent", api_.ctx_set_current);
  resolve(copy_, "cuModuleLoadData", api_.module_load_data);
  resolve(copy_, "cuModuleGetFunction", api_.module_get_function);
  resolve(copy_, "cuMemAlloc_v2", api_.mem_alloc);
  resolve(copy_, "cuLaunchKernel", api_.launch_kernel);
  resolve(copy_, "cuMemcpyHtoD_v2", api_.memcpy_htod);
  resolve(copy_, "cuMemcpyHtoDAsync_v2", api_.memcpy_htod_async);
  resolve(copy_, "cuStreamSynchronize", api_.stream_synchronize);
}

CudaSession::CudaSession(const CudaApi& a) : api(&a) {
  // The simulator reads these at cuInit: no simulated kernel time, and a
  // synchronisation that returns at once, so only the call path is timed.
  ::setenv("CUDASIM_SYNC_US", "0", 1);
  ::setenv("CUDASIM_KERNEL_US", "0", 1);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  static const char kImage[] = "gpuledger-bench";
  check(api->init(0), "cuInit");
  check(api->device_get(&dev, 0), "cuDeviceGet");
  check(api->primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(api->ctx_set_current(ctx), "cuCtxSetCurrent");
  check(api->module_load_data(&module, kImage), "cuModuleLoadData");
  check(api->module_get_function(&kernel, module, "gpuledger_bench_kernel"), "cuModuleGetFunction");
  check(api->mem_alloc(&buffer, kCopyBytes), "cuMemAlloc_v2");
}

}  // namespace gpuledger::bench
