/* A CUDA runtime application for the tests against NVIDIA's real libraries:
 * it dlopens a real libcudart (no CUDA headers: the few prototypes are
 * declared here) and makes the calls an application makes first. With
 * --ready it first asks for the driver's version (which loads the driver),
 * prints "READY <pid>" and waits for a line on stdin, so a test can make sure
 * the agent covers its runtime before the calls that count. Prints what each
 * call returned as one JSON line.
 * Usage: real_runtime_app [--ready] [RUNTIME_LIBRARY]   (default libcudart.so.11.0) */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*version_fn)(int *);
typedef int (*malloc_fn)(void **, size_t);
typedef struct {
    unsigned x, y, z;
} dim3;
typedef int (*launch_fn)(const void *, dim3, dim3, void **, size_t, void *);

int main(int argc, char **argv)
{
    int ready = 0;
    const char *lib = "libcudart.so.11.0";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ready") == 0)
            ready = 1;
        else
            lib = argv[i];
    }
    void *h = dlopen(lib, RTLD_NOW);
    if (!h) {
        printf("{\"error\": \"dlopen failed\"}\n");
        return 3;
    }
    version_fn driver_version = (version_fn)dlsym(h, "cudaDriverGetVersion");
    version_fn device_count = (version_fn)dlsym(h, "cudaGetDeviceCount");
    malloc_fn cuda_malloc = (malloc_fn)dlsym(h, "cudaMalloc");
    launch_fn launch = (launch_fn)dlsym(h, "cudaLaunchKernel");
    if (!driver_version || !device_count || !cuda_malloc || !launch) {
        printf("{\"error\": \"not a CUDA runtime\"}\n");
        return 3;
    }
    int version = 0;
    int rv = driver_version(&version);
    if (ready) {
        printf("READY %d\n", (int)getpid());
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin)) { /* EOF: go on */ }
    }
    int n = -1;
    void *p = NULL;
    int rc = device_count(&n);
    int rm = cuda_malloc(&p, 1 << 20);
    dim3 one = {1, 1, 1};
    int rl = launch((const void *)&main, one, one, NULL, 0, NULL);
    printf("{\"cudaDriverGetVersion\": %d, \"driver_version\": %d, \"cudaGetDeviceCount\": %d, \"cudaMalloc\": %d, "
           "\"cudaLaunchKernel\": %d, \"launches\": 0}\n",
           rv, version, rc, rm, rl);
    fflush(stdout);
    return 0;
}
