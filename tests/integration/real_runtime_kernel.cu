// A CUDA application built by the toolkit's nvcc with the static runtime
// (tests/integration/CMakeLists.txt builds it stripped and not): against
// driver 535 the CUDA 13 runtime it carries fails with "insufficient driver".
// It first asks for the driver's version (loading the driver), prints
// "READY <pid>" and waits for a line on stdin, then makes its calls and
// prints what they returned as one JSON line.
#include <unistd.h>

#include <cstdio>

__global__ void fill(float *p) { p[threadIdx.x] = static_cast<float>(threadIdx.x); }

int main() {
  int version = 0;
  cudaError_t v = cudaDriverGetVersion(&version);
  std::printf("READY %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  char line[16];
  if (!std::fgets(line, sizeof line, stdin)) { /* EOF: go on */ }
  float *p = nullptr;
  cudaError_t m = cudaMalloc(&p, 1 << 20);
  fill<<<2, 64>>>(p);
  cudaError_t l = cudaGetLastError();
  cudaError_t s = cudaDeviceSynchronize();
  std::printf("{\"cudaDriverGetVersion\": %d, \"driver_version\": %d, \"cudaMalloc\": %d, \"launch\": %d, "
              "\"cudaDeviceSynchronize\": %d, \"launches\": 0}\n",
              static_cast<int>(v), version, static_cast<int>(m), static_cast<int>(l), static_cast<int>(s));
  std::fflush(stdout);
  return 0;
}
