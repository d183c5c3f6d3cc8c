// known_work: a CUDA program whose driver-visible work is known exactly, for
// scripts/gpu-validate.sh. It prints one truth line, prefixed GPULEDGER_TRUTH,
// with what it asked the CUDA runtime to do, holds its allocations for
// HOLD_SECONDS (argv[1], default 15) so the agent and nvidia-smi can be read
// while it is alive, then frees everything and exits.
//
// Counting conventions (what gpuledger's driver uprobes see):
//   kernel_launches   one per <<<>>> (cudaLaunchKernel -> cuLaunchKernel[_ptsz])
//   launched_threads  sum over launches of gridDim.x*y*z * blockDim.x*y*z
//   memory_allocations / memory_allocated_bytes   cudaMalloc (-> cuMemAlloc_v2)
//   memcpy_bytes/calls by direction                cudaMemcpy (-> cuMemcpy{HtoD,DtoH,DtoD}_v2)
//   syncs             cudaDeviceSynchronize (-> cuCtxSynchronize) + cudaStreamSynchronize
//   graph_launches    cudaGraphLaunch (-> cuGraphLaunch); the graph is built node by node
//                     (cudaGraphAddKernelNode), so building it launches nothing
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__global__ void fill(float* p, float v, size_t n) {
  size_t i = (size_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  i = i * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  for (; i < n; i += size_t(gridDim.x) * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) p[i] = v;
}

__global__ void saxpy(float a, const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = a * x[i] + y[i];
}

struct Truth {
  unsigned long long launches = 0, threads = 0, allocations = 0, allocated = 0;
  unsigned long long htod = 0, dtoh = 0, dtod = 0, htod_calls = 0, dtoh_calls = 0, dtod_calls = 0, syncs = 0;
  unsigned long long graph_launches = 0;
};

int main(int argc, char** argv) {
  int hold = argc > 1 ? std::atoi(argv[1]) : 15;
  Truth t;
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));  // create the context first: not counted by us, not counted by gpuledger

  const size_t kA = 64u << 20, kB = 32u << 20, kC = (16u << 20) + 4096;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(cudaMalloc(&a, kA)); t.allocations++; t.allocated += kA;
  CHECK(cudaMalloc(&b, kB)); t.allocations++; t.allocated += kB;
  CHECK(cudaMalloc(&c, kC)); t.allocations++; t.allocated += kC;

  std::vector<char> host(kA, 1);
  CHECK(cudaMemcpy(a, host.data(), kA, cudaMemcpyHostToDevice)); t.htod += kA; t.htod_calls++;
  CHECK(cudaMemcpy(b, host.data(), kB, cudaMemcpyHostToDevice)); t.htod += kB; t.htod_calls++;

  auto launch = [&](dim3 grid, dim3 block) {
    t.launches++;
    t.threads += (unsigned long long)grid.x * grid.y * grid.z * block.x * block.y * block.z;
  };
  for (int i = 0; i < 10; ++i) {
    fill<<<256, 256>>>(a, 1.0f + i, kA / sizeof(float));
    launch(dim3(256), dim3(256));
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize()); t.syncs++;
  for (int i = 0; i < 5; ++i) {
    saxpy<<<1024, 128>>>(2.0f, a, b, kB / sizeof(float));
    launch(dim3(1024), dim3(128));
  }
  CHECK(cudaDeviceSynchronize()); t.syncs++;

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int i = 0; i < 3; ++i) {
    fill<<<dim3(8, 4, 2), dim3(32, 4, 1), 0, stream>>>(c, 3.0f, kC / sizeof(float));
    launch(dim3(8, 4, 2), dim3(32, 4, 1));
  }
  CHECK(cudaStreamSynchronize(stream)); t.syncs++;
  CHECK(cudaStreamSynchronize(stream)); t.syncs++;

  // A graph of two kernel nodes, launched four times: four cuGraphLaunch calls,
  // no kernel launches of their own.
  cudaGraph_t graph;
  cudaGraphExec_t graph_exec;
  CHECK(cudaGraphCreate(&graph, 0));
  float value = 5.0f;
  size_t count = kC / sizeof(float);
  void* fill_args[] = {&c, &value, &count};
  cudaKernelNodeParams node{};
  node.func = reinterpret_cast<void*>(fill);
  node.gridDim = dim3(64);
  node.blockDim = dim3(128);
  node.kernelParams = fill_args;
  cudaGraphNode_t first, second;
  CHECK(cudaGraphAddKernelNode(&first, graph, nullptr, 0, &node));
  CHECK(cudaGraphAddKernelNode(&second, graph, &first, 1, &node));
  CHECK(cudaGraphInstantiateWithFlags(&graph_exec, graph, 0));
  for (int i = 0; i < 4; ++i) {
    CHECK(cudaGraphLaunch(graph_exec, stream));
    t.graph_launches++;
  }
  CHECK(cudaStreamSynchronize(stream)); t.syncs++;

  CHECK(cudaMemcpy(c, a, 16u << 20, cudaMemcpyDeviceToDevice)); t.dtod += 16u << 20; t.dtod_calls++;
  CHECK(cudaMemcpy(host.data(), b, kB, cudaMemcpyDeviceToHost)); t.dtoh += kB; t.dtoh_calls++;
  CHECK(cudaMemcpy(host.data(), c, 4096, cudaMemcpyDeviceToHost)); t.dtoh += 4096; t.dtoh_calls++;
  CHECK(cudaDeviceSynchronize()); t.syncs++;
  CHECK(cudaDeviceSynchronize()); t.syncs++;

  std::printf(
      "GPULEDGER_TRUTH {\"pid\":%d,\"kernel_launches\":%llu,\"launched_threads\":%llu,"
      "\"memory_allocations\":%llu,\"memory_allocated_bytes\":%llu,\"memory_live_bytes\":%llu,"
      "\"memcpy_bytes\":{\"htod\":%llu,\"dtoh\":%llu,\"dtod\":%llu},"
      "\"memcpy_calls\":{\"htod\":%llu,\"dtoh\":%llu,\"dtod\":%llu},\"syncs\":%llu,"
      "\"graph_launches\":%llu}\n",
      (int)getpid(), t.launches, t.threads, t.allocations, t.allocated, t.allocated, t.htod, t.dtoh, t.dtod,
      t.htod_calls, t.dtoh_calls, t.dtod_calls, t.syncs, t.graph_launches);
  std::fflush(stdout);

  sleep(hold > 0 ? hold : 0);  // the script reads the agent and nvidia-smi now

  CHECK(cudaGraphExecDestroy(graph_exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return 0;
}
