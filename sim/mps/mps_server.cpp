// nvidia-cuda-mps-server, simulated: the one process that owns the GPU
// contexts under MPS. Like the real server it is a CUDA program itself: it
// initialises the driver and holds its own context memory
// (CUDASIM_MPS_SERVER_BYTES, default 32 MiB) for as long as it runs. It
// writes <CUDA_MPS_PIPE_DIRECTORY>/server.pid (clients find it there, see
// libcuda/cudasim.c) and server.bytes (what it holds, for the NVML
// simulator), and ends on SIGTERM or SIGINT. Started by the simulated
// nvidia-cuda-mps-control, or by hand.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cuda_sim.h"

int main() {
  const char* env_dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string dir = env_dir && *env_dir ? env_dir : "/tmp/nvidia-mps";
  const char* env_bytes = std::getenv("CUDASIM_MPS_SERVER_BYTES");
  const unsigned long long bytes = env_bytes ? std::strtoull(env_bytes, nullptr, 0) : 32ull << 20;
  ::unlink((dir + "/server.pid").c_str());  // a stale one would make this server its own client

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr reserve = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuMemAlloc_v2(&reserve, bytes) != CUDA_SUCCESS) {
    std::fprintf(stderr, "nvidia-cuda-mps-server (simulated): the driver refused\n");
    return 1;
  }
  std::ofstream(dir + "/server.bytes") << bytes << "\n";
  std::ofstream(dir + "/server.pid.tmp") << ::getpid() << "\n";
  ::rename((dir + "/server.pid.tmp").c_str(), (dir + "/server.pid").c_str());
  std::printf("READY %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop, &sig);
  cuMemFree_v2(reserve);
  ::unlink((dir + "/server.pid").c_str());
  ::unlink((dir + "/server.bytes").c_str());
  ::unlink((dir + "/clients").c_str());
  return 0;
}
