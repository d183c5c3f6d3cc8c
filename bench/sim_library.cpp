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
void resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (!out) throw Error(std::string("the simulator does not export ") + name);
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(std::string(what) + " failed with CUresult " + std::to_string(r));
}

}  // namespace

SimLibrary::SimLibrary(const std::string& original) {
  char tmpl[] = "/tmp/gpuledger-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) throw Error("cannot create a temporary directory");
  dir_ = tmpl;
  path_ = dir_ + "/gpuledger-bench-cuda.so";  // not libcuda.so*: see sim_library.h
  std::error_code ec;
  fs::copy_file(original, path_, ec);
  if (ec) throw Error("cannot copy " + original + ": " + ec.message());
  handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw Error(std::string("cannot load the simulator: ") + ::dlerror());
  resolve(handle_, "cuInit", api_.init);
  resolve(handle_, "cuDeviceGet", api_.device_get);
  resolve(handle_, "cuDevicePrimaryCtxRetain", api_.primary_ctx_retain);
  resolve(handle_, "cuCtxSetCurrent", api_.ctx_set_current);
  resolve(handle_, "cuModuleLoadData", api_.module_load_data);
  resolve(handle_, "cuModuleGetFunction", api_.module_get_function);
  resolve(handle_, "cuMemAlloc_v2", api_.mem_alloc);
  resolve(handle_, "cuLaunchKernel", api_.launch_kernel);
  resolve(handle_, "cuMemcpyHtoD_v2", api_.memcpy_htod);
  resolve(handle_, "cuStreamSynchronize", api_.stream_synchronize);
}

SimLibrary::~SimLibrary() {
  // The library stays mapped until exit (forked children share it); only the
  // directory entry goes, which does not disturb the mapping.
  std::error_code ec;
  fs::remove_all(dir_, ec);
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
