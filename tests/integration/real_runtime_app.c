/* A CUDA runtime application for the tests against NVIDIA's real libraries:
 * it dlopens a real libcudart (no CUDA headers: the few prototypes are
 * declared here) and makes the calls an application makes first. With
 * --ready it first asks for the driver's version (which loads the driver),
 * prints "READY <pid>" and waits for a line on stdin, so a test can make sure
 * the agent covers its runtime before the calls that count. Prints what each
 * call returned as one JSON line.
 * With --driver LIB it also dlopens the driver library itself and keeps it
 * mapped while it waits (a runtime whose initialisation failed unloads it),
 * the way nvidia-persistenced or a CUDA service holds the host's driver.
 * Usage: real_runtime_app [--ready] [--driver LIB] [RUNTIME_LIBRARY]   (default libcudart.so.11.0) */
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
    const char *lib = "libcudart.so.11.0", *driver = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ready") == 0)
            ready = 1;
        else if (strcmp(argv[i], "--driver") == 0 && i + 1 < argc)
            driver = argv[++i];
        else
            lib = argv[i];
    }
    if (driver && !dlopen(driver, RTLD_NOW)) {
        printf("{\"error\": \"dlopen of the driver failed\"}\n");
        return 3;
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
