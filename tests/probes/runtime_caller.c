/*
 * gpuledger-runtime-caller: a CUDA runtime application with no CUDA headers.
 * It dlopens the runtime library it is given (NVIDIA's real libcudart, any
 * version) and makes a few runtime calls, the first of which makes the runtime
 * load the driver and fetch its entry points; without a GPU each call fails
 * fast. Prints the runtime's answers as one JSON line.
 *
 * Usage: gpuledger-runtime-caller LIBCUDART
 *
 * Built with GL_STATIC_RUNTIME (gpuledger-static-runtime-caller, where a CUDA
 * toolkit has libcudart_static.a): the runtime is linked in, as nvcc does by
 * default, and the argument is ignored. Linked on glibc 2.34 or later, such a
 * program imports dlsym@GLIBC_2.34, as the GPU validation kit's program did.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

typedef int cudaError_t;

#ifdef GL_STATIC_RUNTIME
cudaError_t cudaRuntimeGetVersion(int *);
cudaError_t cudaDriverGetVersion(int *);
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaDeviceSynchronize(void);
const char *cudaGetErrorName(cudaError_t);
#endif

int main(int argc, char **argv)
{
#ifdef GL_STATIC_RUNTIME
    (void)argc, (void)argv;
    cudaError_t (*runtime_version)(int *) = cudaRuntimeGetVersion;
    cudaError_t (*driver_version)(int *) = cudaDriverGetVersion;
    cudaError_t (*device_count)(int *) = cudaGetDeviceCount;
    cudaError_t (*malloc_fn)(void **, size_t) = cudaMalloc;
    cudaError_t (*free_fn)(void *) = cudaFree;
    cudaError_t (*sync)(void) = cudaDeviceSynchronize;
    const char *(*error_name)(cudaError_t) = cudaGetErrorName;
#else
    if (argc != 2) {
        fprintf(stderr, "usage: gpuledger-runtime-caller LIBCUDART\n");
        return 2;
    }
    void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!rt) {
        fprintf(stderr, "gpuledger-runtime-caller: cannot load %s: %s\n", argv[1], dlerror());
        return 2;
    }
    cudaError_t (*runtime_version)(int *) = (cudaError_t(*)(int *))dlsym(rt, "cudaRuntimeGetVersion");
    cudaError_t (*driver_version)(int *) = (cudaError_t(*)(int *))dlsym(rt, "cudaDriverGetVersion");
    cudaError_t (*device_count)(int *) = (cudaError_t(*)(int *))dlsym(rt, "cudaGetDeviceCount");
    cudaError_t (*malloc_fn)(void **, size_t) = (cudaError_t(*)(void **, size_t))dlsym(rt, "cudaMalloc");
    cudaError_t (*free_fn)(void *) = (cudaError_t(*)(void *))dlsym(rt, "cudaFree");
    cudaError_t (*sync)(void) = (cudaError_t(*)(void))dlsym(rt, "cudaDeviceSynchronize");
    const char *(*error_name)(cudaError_t) = (const char *(*)(cudaError_t))dlsym(rt, "cudaGetErrorName");
    if (!runtime_version || !driver_version || !device_count || !malloc_fn || !free_fn || !sync || !error_name) {
        fprintf(stderr, "gpuledger-runtime-caller: %s lacks the runtime API\n", argv[1]);
        return 2;
    }
#endif
    int runtime = 0, driver = 0, devices = -1;
    void *p = NULL;
    cudaError_t rv = runtime_version(&runtime);
    cudaError_t dv = driver_version(&driver);
    cudaError_t dc = device_count(&devices);
    cudaError_t ma = malloc_fn(&p, 1 << 20);
    cudaError_t fr = free_fn(p);
    cudaError_t sy = sync();
    printf("{\"runtime_version\": %d, \"driver_version\": %d, \"cudaRuntimeGetVersion\": %d, "
           "\"cudaDriverGetVersion\": %d, \"cudaGetDeviceCount\": %d, \"cudaGetDeviceCount_error\": \"%s\", "
           "\"devices\": %d, \"cudaMalloc\": %d, \"cudaFree\": %d, \"cudaDeviceSynchronize\": %d}\n",
           runtime, driver, rv, dv, dc, error_name(dc), devices, ma, fr, sy);
    return 0;
}
