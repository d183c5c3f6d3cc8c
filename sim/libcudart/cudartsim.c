/*
 * gpuledger CUDA runtime stand-in (libcudart.so.12 / libcudart_static.a), no
 * GPU behind it.
 *
 * It reaches the driver the way NVIDIA's libcudart does: it dlopens
 * libcuda.so.1 at its first call, takes cuGetProcAddress_v2 from it, and gets
 * every other driver entry point through that - never by linking against
 * libcuda.  Whether those pointers are the driver's exported symbols or
 * internal ones is the driver's choice (the simulator's CUDASIM_PROC_BYPASS),
 * which is exactly the question gpuledger's runtime probes exist for.
 *
 * Like libcudart: a per-thread current device (0 until cudaSetDevice), whose
 * primary context is made current on the thread before the first call that
 * needs one; cudaMemcpyHostToHost and zero-byte copies never reach the driver.
 *
 * Exported entry points never call one another (they share static helpers),
 * so a uprobe on one fires exactly once per application call - unless
 * CUDARTSIM_NESTED is set: then cudaMemcpy calls the exported
 * cudaMemcpyAsync, the nesting a runtime's own entry points may show.
 */
#define _GNU_SOURCE
#define CUDARTSIM_BUILDING_LIBRARY 1
#include "cuda_runtime_sim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_sim.h"

#define RUNTIME_VERSION 12040 /* the CUDA version it asks the driver for */

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, CUstream, void **, void **);
typedef CUresult (*copy_fn)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*copy_async_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*graph_fn)(CUgraphExec, CUstream);

/* The driver entry points, as cuGetProcAddress_v2 handed them out. */
static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_count)(int *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*module_load)(CUmodule *, const void *);
    CUresult (*get_function)(CUfunction *, CUmodule, const char *);
    launch_fn launch, launch_ptsz;
    graph_fn graph, graph_ptsz;
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    copy_fn dtod, copy;
    CUresult (*htod_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
    copy_async_fn dtod_async, copy_async;
    stream_fn stream_sync, stream_sync_ptsz;
    CUresult (*ctx_sync)(void);
} drv;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cudaError_t g_init_error = cudaErrorInitializationError;
static int g_device_count;
static pthread_mutex_t g_kernel_mu = PTHREAD_MUTEX_INITIALIZER;
static CUfunction g_kernel; /* every host stub launches this one simulated kernel */

static __thread int t_device;         /* cudaSetDevice's, 0 until then */
static __thread int t_bound = -1;     /* device whose primary context is current here */

static int resolve(get_proc_fn get_proc, const char *name, cuuint64_t flags, void **out)
{
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return get_proc(name, out, RUNTIME_VERSION, flags, &status) == CUDA_SUCCESS && *out;
}

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    get_proc_fn get_proc = lib ? (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    if (!get_proc) {
        g_init_error = cudaErrorInsufficientDriver;
        return;
    }
    const cuuint64_t legacy = CU_GET_PROC_ADDRESS_DEFAULT, ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    const struct {
        const char *name;
        cuuint64_t flags;
        void **slot;
    } wanted[] = {
        {"cuInit", legacy, (void **)&drv.init},
        {"cuDeviceGetCount", legacy, (void **)&drv.device_count},
        {"cuDevicePrimaryCtxRetain", legacy, (void **)&drv.primary_retain},
        {"cuCtxSetCurrent", legacy, (void **)&drv.set_current},
        {"cuModuleLoadData", legacy, (void **)&drv.module_load},
        {"cuModuleGetFunction", legacy, (void **)&drv.get_function},
        {"cuLaunchKernel", legacy, (void **)&drv.launch},
        {"cuLaunchKernel", ptds, (void **)&drv.launch_ptsz},
        {"cuGraphLaunch", legacy, (void **)&drv.graph},
        {"cuGraphLaunch", ptds, (void **)&drv.graph_ptsz},
        {"cuMemAlloc", legacy, (void **)&drv.alloc},
        {"cuMemFree", legacy, (void **)&drv.free},
        {"cuMemcpyHtoD", legacy, (void **)&drv.htod},
        {"cuMemcpyDtoH", legacy, (void **)&drv.dtoh},
        {"cuMemcpyDtoD", legacy, (void **)&drv.dtod},
        {"cuMemcpy", legacy, (void **)&drv.copy},
        {"cuMemcpyHtoDAsync", legacy, (void **)&drv.htod_async},
        {"cuMemcpyDtoHAsync", legacy, (void **)&drv.dtoh_async},
        {"cuMemcpyDtoDAsync", legacy, (void **)&drv.dtod_async},
        {"cuMemcpyAsync", legacy, (void **)&drv.copy_async},
        {"cuStreamSynchronize", legacy, (void **)&drv.stream_sync},
        {"cuStreamSynchronize", ptds, (void **)&drv.stream_sync_ptsz},
        {"cuCtxSynchronize", legacy, (void **)&drv.ctx_sync},
    };
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        if (!resolve(get_proc, wanted[i].name, wanted[i].flags, wanted[i].slot)) {
            g_init_error = cudaErrorInsufficientDriver;
            return;
        }
    CUresult r = drv.init(0);
    if (r == CUDA_SUCCESS)
        r = drv.device_count(&g_device_count);
    g_init_error = (cudaError_t)r;
}

static cudaError_t runtime_ready(void)
{
    pthread_once(&g_once, load_driver);
    return g_init_error;
}

/* The current device's primary context, made current on this thread. */
static cudaError_t bind_context(void)
{
    cudaError_t e = runtime_ready();
    if (e != cudaSuccess || t_bound == t_device)
        return e;
    CUcontext ctx = NULL;
    CUresult r = drv.primary_retain(&ctx, t_device);
    if (r == CUDA_SUCCESS)
        r = drv.set_current(ctx);
    if (r == CUDA_SUCCESS)
        t_bound = t_device;
    return (cudaError_t)r;
}

static cudaError_t kernel_for(const void *func, CUfunction *out)
{
    if (!func)
        return cudaErrorInvalidDeviceFunction;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&g_kernel_mu);
    if (!g_kernel) {
        CUmodule mod = NULL;
        r = drv.module_load(&mod, "cudartsim");
        if (r == CUDA_SUCCESS)
            r = drv.get_function(&g_kernel, mod, "cudartsim_kernel");
    }
    *out = g_kernel;
    pthread_mutex_unlock(&g_kernel_mu);
    return (cudaError_t)r;
}

static cudaError_t launch(launch_fn fn, const void *func, dim3 g, dim3 b, void **args, size_t shmem,
                          cudaStream_t stream)
{
    CUfunction f = NULL;
    cudaError_t e = bind_context();
    if (e == cudaSuccess)
        e = kernel_for(func, &f);
    if (e != cudaSuccess)
        return e;
    return (cudaError_t)fn(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, stream, args, NULL);
}

static cudaError_t copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int async,
                        cudaStream_t stream)
{
    cudaError_t e;
    if (kind == cudaMemcpyHostToHost) {
        if (n)
            memmove(dst, src, n);
        return cudaSuccess;
    }
    if ((unsigned)kind > cudaMemcpyDefault)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    if ((e = bind_context()) != cudaSuccess)
        return e;
    CUdeviceptr d = (CUdeviceptr)(size_t)dst, s = (CUdeviceptr)(size_t)src;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return (cudaError_t)(async ? drv.htod_async(d, src, n, stream) : drv.htod(d, src, n));
    case cudaMemcpyDeviceToHost:
        return (cudaError_t)(async ? drv.dtoh_async(dst, s, n, stream) : drv.dtoh(dst, s, n));
    case cudaMemcpyDeviceToDevice:
        return (cudaError_t)(async ? drv.dtod_async(d, s, n, stream) : drv.dtod(d, s, n));
    default:
        return (cudaError_t)(async ? drv.copy_async(d, s, n, stream) : drv.copy(d, s, n));
    }
}

static cudaError_t stream_sync(stream_fn fn, cudaStream_t stream)
{
    cudaError_t e = bind_context();
    return e != cudaSuccess ? e : (cudaError_t)fn(stream);
}

static cudaError_t graph_launch(graph_fn fn, cudaGraphExec_t exec, cudaStream_t stream)
{
    cudaError_t e = bind_context();
    return e != cudaSuccess ? e : (cudaError_t)fn(exec, stream);
}

/* ================================================================ exports */
CUDARTSIM_API cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (!version)
        return cudaErrorInvalidValue;
    *version = RUNTIME_VERSION;
    return cudaSuccess;
}

CUDARTSIM_API cudaError_t cudaGetDeviceCount(int *count)
{
    cudaError_t e = runtime_ready();
    if (e == cudaSuccess && count)
        *count = g_device_count;
    return e != cudaSuccess ? e : count ? cudaSuccess : cudaErrorInvalidValue;
}

/* Like CUDA 12's: the device's primary context is made current at once. */
CUDARTSIM_API cudaError_t cudaSetDevice(int device)
{
    cudaError_t e = runtime_ready();
    if (e != cudaSuccess)
        return e;
    if (device < 0 || device >= g_device_count)
        return cudaErrorInvalidDevice;
    t_device = device;
    return bind_context();
}

CUDARTSIM_API cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return cudaErrorInvalidValue;
    *device = t_device;
    return cudaSuccess;
}

CUDARTSIM_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    if (!devPtr)
        return cudaErrorInvalidValue;
    *devPtr = NULL;
    if (size == 0)
        return cudaSuccess; /* as libcudart: a null pointer, no driver call */
    cudaError_t e = bind_context();
    if (e != cudaSuccess)
        return e;
    CUdeviceptr p = 0;
    CUresult r = drv.alloc(&p, size);
    if (r == CUDA_SUCCESS)
        *devPtr = (void *)(size_t)p;
    return (cudaError_t)r;
}

CUDARTSIM_API cudaError_t cudaFree(void *devPtr)
{
    if (!devPtr)
        return cudaSuccess; /* freeing null is a no-op */
    cudaError_t e = bind_context();
    return e != cudaSuccess ? e : (cudaError_t)drv.free((CUdeviceptr)(size_t)devPtr);
}

CUDARTSIM_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    /* The one exception to "exports never call one another", on request: a
     * runtime whose entry points call each other, as a statically linked one
     * may (the inner call hits its own uprobe, nested in the outer's frame). */
    static int nested = -1;
    if (nested < 0)
        nested = getenv("CUDARTSIM_NESTED") != NULL;
    if (nested)
        return cudaMemcpyAsync(dst, src, count, kind, NULL);
    return copy(dst, src, count, kind, 0, NULL);
}

CUDARTSIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                          cudaStream_t stream)
{
    return copy(dst, src, count, kind, 1, stream);
}

CUDARTSIM_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                           size_t sharedMem, cudaStream_t stream)
{
    return launch(drv.launch, func, gridDim, blockDim, args, sharedMem, stream);
}

CUDARTSIM_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                size_t sharedMem, cudaStream_t stream)
{
    cudaError_t e = launch(drv.launch_ptsz, func, gridDim, blockDim, args, sharedMem, stream);
    __asm__ volatile("" ::: "memory");
    return e;
}

CUDARTSIM_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    return graph_launch(drv.graph, exec, stream);
}

CUDARTSIM_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream)
{
    cudaError_t e = graph_launch(drv.graph_ptsz, exec, stream);
    __asm__ volatile("" ::: "memory");
    return e;
}

CUDARTSIM_API cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    return stream_sync(drv.stream_sync, stream);
}

CUDARTSIM_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    cudaError_t e = stream_sync(drv.stream_sync_ptsz, stream);
    __asm__ volatile("" ::: "memory");
    return e;
}

CUDARTSIM_API cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = bind_context();
    return e != cudaSuccess ? e : (cudaError_t)drv.ctx_sync();
}
