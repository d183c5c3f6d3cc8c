// gpuledger-cudartsim: a CUDA runtime application for the simulator (no GPU
// behind it). It makes one fixed round of runtime API calls - the shape of an
// nvcc-built program: allocations, copies each way, launches, a graph, syncs -
// and prints what succeeded as one JSON line (the keys of gpuledger-cudasim's),
// so tests can compare gpuledger's counts with the truth.
//
// Built twice: against the shared stand-in (libcudart.so.12) and with the
// static one linked in (nvcc's default, -cudart static), symbols kept.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "cuda_runtime_sim.h"

namespace {

const char* kUsage = R"(usage: gpuledger-cudartsim [--device N] [--rounds N] [--ptsz] [--ready]

One fixed workload through the CUDA runtime stand-in (no GPU is used):
  cudaSetDevice(N); cudaMalloc 1 MiB and 4 KiB; a failing cudaMalloc (too big);
  per round: cudaMemcpy 4096 bytes host-to-device, cudaLaunchKernel (2,3,4)x(8,8,2);
  cudaMemcpy 1000 device-to-host; cudaMemcpyAsync 512 device-to-device;
  cudaMemcpy 256 cudaMemcpyDefault; cudaMemcpy host-to-host, cudaMalloc of 0 bytes
  and cudaFree(NULL) (none reaches the driver); cudaGraphLaunch x2;
  cudaStreamSynchronize; cudaDeviceSynchronize; cudaFree both.

options:
  --device N   the device to use (default 0)
  --rounds N   copy+launch rounds (default 1)
  --ptsz       launches, graphs and stream syncs through their _ptsz forms
  --ready      after the runtime has loaded the driver: print "READY <pid>" and
               wait for a line on stdin before the workload
)";

struct Truth {
  unsigned long long launches = 0, threads = 0, graphs = 0, allocations = 0, allocated = 0, freed = 0, syncs = 0;
  std::map<std::string, unsigned long long> bytes{{"htod", 0}, {"dtoh", 0}, {"dtod", 0}, {"peer", 0}, {"unknown", 0}};
  std::map<std::string, unsigned long long> copies = bytes;
  std::map<std::string, unsigned long long> errors;

  bool ok(cudaError_t e, const char* call) {
    if (e == cudaSuccess) return true;
    ++errors[call];
    return false;
  }
  void copied(const char* direction, size_t n) {
    bytes[direction] += n;
    ++copies[direction];
  }
};

std::string json_map(const std::map<std::string, unsigned long long>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) out += (out.size() > 1 ? "," : "") + ("\"" + k + "\":" + std::to_string(v));
  return out + "}";
}

void print(const Truth& t) {
  std::printf(
      "{\"pid\":%d,\"launches\":%llu,\"launched_threads\":%llu,\"graph_launches\":%llu,\"allocations\":%llu,"
      "\"allocated_bytes\":%llu,\"freed_bytes\":%llu,\"syncs\":%llu,\"memcpy_bytes\":%s,\"memcpy\":%s,"
      "\"errors\":%s}\n",
      getpid(), t.launches, t.threads, t.graphs, t.allocations, t.allocated, t.freed, t.syncs,
      json_map(t.bytes).c_str(), json_map(t.copies).c_str(), json_map(t.errors).c_str());
}

void kernel_stub() {}  // the host stub a real program would pass

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  unsigned rounds = 1;
  bool ptsz = false, ready = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--ptsz") {
      ptsz = true;
    } else if (a == "--ready") {
      ready = true;
    } else {
      std::fputs(kUsage, a == "-h" || a == "--help" ? stdout : stderr);
      return a == "-h" || a == "--help" ? 0 : 64;
    }
  }
  Truth t;
  int count = 0;
  if (!t.ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount")) {
    print(t);
    return 2;
  }
  if (ready) {
    std::printf("READY %d\n", getpid());
    std::fflush(stdout);
    std::string line;
    std::getline(std::cin, line);
  }
  static char host[4096], host2[4096];
  void *a = nullptr, *b = nullptr, *none = nullptr, *huge = nullptr;
  const size_t kA = 1 << 20, kB = 4096;
  t.ok(cudaSetDevice(device), "cudaSetDevice");
  if (t.ok(cudaMalloc(&a, kA), "cudaMalloc")) ++t.allocations, t.allocated += kA;
  if (t.ok(cudaMalloc(&b, kB), "cudaMalloc")) ++t.allocations, t.allocated += kB;
  t.ok(cudaMalloc(&huge, 1ULL << 60), "cudaMalloc");
  const dim3 grid{2, 3, 4}, block{8, 8, 2};
  for (unsigned r = 0; r < rounds; ++r) {
    if (t.ok(cudaMemcpy(a, host, 4096, cudaMemcpyHostToDevice), "cudaMemcpy")) t.copied("htod", 4096);
    auto launch = ptsz ? cudaLaunchKernel_ptsz : cudaLaunchKernel;
    if (t.ok(launch(reinterpret_cast<const void*>(&kernel_stub), grid, block, nullptr, 0, nullptr),
             "cudaLaunchKernel")) {
      ++t.launches;
      t.threads += 24 * 128;
    }
  }
  if (t.ok(cudaMemcpy(host, a, 1000, cudaMemcpyDeviceToHost), "cudaMemcpy")) t.copied("dtoh", 1000);
  if (t.ok(cudaMemcpyAsync(b, a, 512, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync")) t.copied("dtod", 512);
  if (t.ok(cudaMemcpy(b, a, 256, cudaMemcpyDefault), "cudaMemcpy")) t.copied("unknown", 256);
  // None of these reaches the driver, and none is counted.
  t.ok(cudaMemcpy(host2, host, 64, cudaMemcpyHostToHost), "cudaMemcpy");
  t.ok(cudaMalloc(&none, 0), "cudaMalloc");
  t.ok(cudaFree(nullptr), "cudaFree");
  auto exec = reinterpret_cast<cudaGraphExec_t>(0x1000);
  for (int i = 0; i < 2; ++i)
    if (t.ok((ptsz ? cudaGraphLaunch_ptsz : cudaGraphLaunch)(exec, nullptr), "cudaGraphLaunch")) ++t.graphs;
  if (t.ok((ptsz ? cudaStreamSynchronize_ptsz : cudaStreamSynchronize)(nullptr), "cudaStreamSynchronize")) ++t.syncs;
  if (t.ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) ++t.syncs;
  if (a && t.ok(cudaFree(a), "cudaFree")) t.freed += kA;
  if (b && t.ok(cudaFree(b), "cudaFree")) t.freed += kB;
  print(t);
  return 0;
}
