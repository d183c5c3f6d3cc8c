/*
 * A stand-in driver library whose cuGetProcAddress_v2 hands out every kind of
 * pointer the address check must tell apart (tests/kit/address_check_test.sh):
 *   cuMemAlloc        -> cuMemAlloc_v2, an exported symbol the plan probes
 *   cuLaunchKernel    -> a hidden function: no exported symbol starts there
 *   cuMemFree         -> the middle of the exported cuMemFree_v2
 *   cuCtxSynchronize  -> cuCtxSynchronize_internal, exported but not probed
 *   anything else     -> CUDA_ERROR_NOT_FOUND
 * The functions only need distinct addresses: nothing calls them.
 */
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default"), noinline, used))

EXPORT int cuInit(unsigned flags) { return flags ? 1 : 0; }
EXPORT int cuDriverGetVersion(int *v) { *v = 12080; return 0; }
EXPORT int cuMemAlloc_v2(uint64_t *p, size_t n) { *p = n + 1; return 0; }
EXPORT int cuMemFree_v2(uint64_t p) { return p == 7 ? 2 : p == 9 ? 3 : 0; }
EXPORT int cuLaunchKernel(void *f) { return f ? 0 : 1; }
EXPORT int cuCtxSynchronize(void) { return 5; }
EXPORT int cuCtxSynchronize_internal(void) { return 6; }
__attribute__((visibility("hidden"), noinline, used)) int hidden_launch(void *f) { return f ? 7 : 8; }

EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status)
{
    (void)version;
    (void)flags;
    void *fn = NULL;
    if (!strcmp(symbol, "cuMemAlloc"))
        fn = (void *)&cuMemAlloc_v2;
    else if (!strcmp(symbol, "cuLaunchKernel"))
        fn = (void *)&hidden_launch;
    else if (!strcmp(symbol, "cuMemFree"))
        fn = (char *)&cuMemFree_v2 + 1;
    else if (!strcmp(symbol, "cuCtxSynchronize"))
        fn = (void *)&cuCtxSynchronize_internal;
    *pfn = fn;
    if (status)
        *status = fn ? 0 : 1;
    return fn ? 0 : 500;
}
