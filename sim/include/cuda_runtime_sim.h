/*
 * cuda_runtime_sim.h -- the CUDA runtime API subset that the gpuledger runtime
 * stand-in (build/sim/lib/libcudart.so.12, and libcudart_static.a) exports.
 * No GPU behind it: the stand-in reaches the simulated driver the way
 * NVIDIA's libcudart reaches libcuda.so.1 (dlopen, then cuGetProcAddress_v2).
 *
 * Signatures follow the real cuda_runtime_api.h on x86-64, so a uprobe reads
 * arguments from the same registers: dim3 (12 bytes) is passed by value in
 * two registers (x | y << 32, then z).
 */
#ifndef GPULEDGER_CUDA_RUNTIME_SIM_H
#define GPULEDGER_CUDA_RUNTIME_SIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CUDARTSIM_BUILDING_LIBRARY)
#define CUDARTSIM_API __attribute__((visibility("default"), noinline, used))
#else
#define CUDARTSIM_API
#endif

/* cudaError_t values mirror the driver's CUresult for every code the
 * simulator returns (as the real enums do for these). */
typedef int cudaError_t;
#define cudaSuccess 0
#define cudaErrorInvalidValue 1
#define cudaErrorInitializationError 3
#define cudaErrorInvalidDeviceFunction 98
#define cudaErrorInvalidDevice 101
#define cudaErrorInsufficientDriver 35

typedef struct CUstream_st *cudaStream_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;

typedef struct dim3 {
    unsigned int x, y, z;
} dim3;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};

CUDARTSIM_API cudaError_t cudaRuntimeGetVersion(int *version);
CUDARTSIM_API cudaError_t cudaGetDeviceCount(int *count);
CUDARTSIM_API cudaError_t cudaSetDevice(int device);
CUDARTSIM_API cudaError_t cudaGetDevice(int *device);
CUDARTSIM_API cudaError_t cudaMalloc(void **devPtr, size_t size);
CUDARTSIM_API cudaError_t cudaFree(void *devPtr);
CUDARTSIM_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
CUDARTSIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                          enum cudaMemcpyKind kind, cudaStream_t stream);
CUDARTSIM_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                           size_t sharedMem, cudaStream_t stream);
CUDARTSIM_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                                void **args, size_t sharedMem, cudaStream_t stream);
CUDARTSIM_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
CUDARTSIM_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);
CUDARTSIM_API cudaError_t cudaStreamSynchronize(cudaStream_t stream);
CUDARTSIM_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
CUDARTSIM_API cudaError_t cudaDeviceSynchronize(void);

#ifdef __cplusplus
}
#endif

#endif /* GPULEDGER_CUDA_RUNTIME_SIM_H */
