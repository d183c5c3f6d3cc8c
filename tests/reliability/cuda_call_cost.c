/* The cost of one call into a CUDA driver library, as any process on the node
 * pays it: dlopens the library given, then times cuCtxSetCurrent(NULL) - an
 * entry point gpuledger probes (entry and return), answered in user space
 * without a GPU - in batches, and prints the median per-call time of the
 * batches in nanoseconds ("median_ns N"). A probe left attached makes each call
 * trap into the kernel (microseconds); none, and it is tens of nanoseconds.
 * Usage: cuda_call_cost LIBCUDA [BATCHES [CALLS_PER_BATCH]] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_ctx_set_current_fn)(void*);

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cuda_call_cost LIBCUDA [BATCHES [CALLS_PER_BATCH]]\n");
    return 2;
  }
  int batches = argc > 2 ? atoi(argv[2]) : 200, calls = argc > 3 ? atoi(argv[3]) : 100;
  if (batches < 1 || calls < 1) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  cu_init_fn cu_init = (cu_init_fn)dlsym(lib, "cuInit");
  cu_ctx_set_current_fn set_current = (cu_ctx_set_current_fn)dlsym(lib, "cuCtxSetCurrent");
  if (!cu_init || !set_current) {
    fprintf(stderr, "%s does not export cuInit and cuCtxSetCurrent\n", argv[1]);
    return 1;
  }
  int init = cu_init(0); /* 100 (no device) without a GPU; either way the calls below are cheap */
  double* per_call = malloc(sizeof(double) * (size_t)batches);
  if (!per_call) return 1;
  for (int b = 0; b < batches; ++b) {
    double start = now_ns();
    for (int i = 0; i < calls; ++i) set_current(NULL);
    per_call[b] = (now_ns() - start) / calls;
  }
  qsort(per_call, (size_t)batches, sizeof(double), by_value);
  printf("cuInit %d\nmedian_ns %.1f\n", init, per_call[batches / 2]);
  free(per_call);
  return 0;
}
