/*
 * gpuledger CUDA driver simulator, no GPU behind it.
 *
 * A stand-in for NVIDIA's libcuda.so.1 that exports a subset of the CUDA
 * driver API with the real C signatures, so gpuledger's uprobes can be
 * exercised on machines without a GPU.  Behaviour is deterministic and
 * thread-safe (one global mutex):
 *   - every call except cuDriverGetVersion / cuGetErrorName / cuGetErrorString
 *     / cuGetProcAddress* returns CUDA_ERROR_NOT_INITIALIZED before cuInit;
 *   - allocations return fake, never-reused device addresses
 *     (0x7f0000000000 upwards, 512-aligned; legacy 32-bit forms use
 *     0x10000000 upwards) tracked in a table;
 *   - copies copy nothing; kernels only advance a per-stream simulated clock;
 *   - synchronisation sleeps until max(now + CUDASIM_SYNC_US, outstanding work).
 *
 * IMPORTANT: exported entry points never call one another (they all go
 * through static helpers), so a uprobe on one entry point fires exactly once
 * per application call.  The library is built with -fno-ipa-icf and every
 * export is noinline, so each entry point has its own address.
 *
 * Environment (read by cuInit, until the first successful cuInit):
 *   CUDASIM_DEVICES       number of simulated devices (default 1, max 64;
 *                         0 makes cuInit fail with CUDA_ERROR_NO_DEVICE)
 *   CUDASIM_MEMORY_BYTES  per-device capacity (default 80 GiB)
 *   CUDASIM_KERNEL_US     simulated duration of each launch (default 0)
 *   CUDASIM_SYNC_US       minimum duration of each synchronisation (default 0)
 *   CUDA_MPS_PIPE_DIRECTORY  as with NVIDIA's driver: where an MPS control
 *                         daemon listens. When a simulated MPS server runs
 *                         there (sim/mps: <dir>/server.pid), the first
 *                         successful cuInit attaches this process as its
 *                         client (appends its pid to <dir>/clients), the way a
 *                         real client connects to the server. Its calls stay
 *                         its own, as a real MPS client's libcuda calls do.
 */
#define _GNU_SOURCE
#define CUDASIM_BUILDING_LIBRARY 1
#include "cuda_sim.h"
#include "cudasim_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default"), noinline, used))

#define SIM_VERSION_STRING \
    "gpuledger CUDA driver simulator, no GPU behind it (libcuda.so.1 stand-in, driver API 12040)"

#define MAX_DEVICES 64
#define ADDR_BASE 0x7f0000000000ULL
#define LEGACY_BASE 0x10000000ULL
#define LEGACY_LIMIT 0x100000000ULL
#define ALIGN 512ULL
#define MAX_ALLOC (1ULL << 52)

/* ------------------------------------------------------------------ state */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static int g_device_count;
static unsigned long long g_capacity = 80ULL << 30;
static unsigned long long g_kernel_ns;
static unsigned long long g_sync_ns;
static unsigned long long g_used[MAX_DEVICES];
static unsigned long long g_live_total;
static unsigned long long g_next_addr = ADDR_BASE;
static unsigned long long g_next_legacy = LEGACY_BASE;
static unsigned long long g_busy_max; /* latest end of any simulated work */

enum obj_kind {
    K_FREE = 0,
    /* memory table */
    K_MEM_DEVICE,
    K_MEM_MANAGED,
    K_MEM_ASYNC,
    K_MEM_PITCH,
    K_MEM_LEGACY,
    K_MEM_HANDLE, /* cuMemCreate */
    K_MEM_ARRAY,  /* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate */
    /* handle table */
    K_CTX,
    K_STREAM,
    K_EVENT,
    K_MODULE,
    K_FUNCTION,
    K_POOL
};

struct CUctx_st {
    int device;
    int primary;
};
struct CUstream_st {
    unsigned long long busy_until;
};
struct CUevent_st {
    unsigned long long at;
};
struct CUmod_st {
    int dummy;
};
struct CUfunc_st {
    char name[64];
    unsigned int block[3]; /* cuFuncSetBlockShape, for the legacy launches */
    int block_set;
};
struct CUmemPoolHandle_st {
    int device;
};

static struct CUstream_st g_default_stream;
static struct CUctx_st *g_primary[MAX_DEVICES];
static unsigned int g_primary_refs[MAX_DEVICES];
static struct CUmemPoolHandle_st g_pools[MAX_DEVICES];

static _Thread_local CUcontext t_ctx_stack[64];
static _Thread_local int t_ctx_depth;

/* -------------------------------------------------- tiny chained hash map */
struct entry {
    unsigned long long key;
    unsigned long long size;
    int kind;
    int device;
    struct entry *next;
};

#define NBUCKETS (1u << 16)
struct table {
    struct entry *b[NBUCKETS];
};
static struct table g_mem;     /* device addresses / memory handles */
static struct table g_handles; /* contexts, streams, events, ... by pointer */

static unsigned int hash_key(unsigned long long k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (unsigned int)(k & (NBUCKETS - 1));
}

static struct entry *tbl_find(struct table *t, unsigned long long key)
{
    for (struct entry *e = t->b[hash_key(key)]; e; e = e->next)
        if (e->key == key)
            return e;
    return NULL;
}

static int tbl_insert(struct table *t, unsigned long long key, unsigned long long size, int kind,
                      int device)
{
    struct entry *e = malloc(sizeof *e);
    if (!e)
        return -1;
    unsigned int h = hash_key(key);
    e->key = key;
    e->size = size;
    e->kind = kind;
    e->device = device;
    e->next = t->b[h];
    t->b[h] = e;
    return 0;
}

static void tbl_remove(struct table *t, unsigned long long key)
{
    struct entry **pp = &t->b[hash_key(key)];
    while (*pp) {
        if ((*pp)->key == key) {
            struct entry *dead = *pp;
            *pp = dead->next;
            free(dead);
            return;
        }
        pp = &(*pp)->next;
    }
}

static int handle_is(const void *p, int kind)
{
    if (!p)
        return 0;
    struct entry *e = tbl_find(&g_handles, (unsigned long long)(uintptr_t)p);
    return e && e->kind == kind;
}

static void *handle_new(size_t sz, int kind)
{
    void *p = calloc(1, sz);
    if (!p)
        return NULL;
    if (tbl_insert(&g_handles, (unsigned long long)(uintptr_t)p, 0, kind, 0) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void handle_delete(void *p)
{
    tbl_remove(&g_handles, (unsigned long long)(uintptr_t)p);
    free(p);
}

/* ------------------------------------------------------------------ time */
static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void sleep_until(unsigned long long t)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(t / 1000000000ULL);
    ts.tv_nsec = (long)(t % 1000000000ULL);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static unsigned long long max_u64(unsigned long long a, unsigned long long b)
{
    return a > b ? a : b;
}

/* ------------------------------------------------------------ env config */
static unsigned long long env_u64(const char *name, unsigned long long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 0);
    if (errno || !end || *end || v[0] == '-')
        return dflt;
    return x;
}

/* ------------------------------------------------------- common checks */
#define LOCK() pthread_mutex_lock(&g_mu)
#define UNLOCK() pthread_mutex_unlock(&g_mu)

static int dev_ok(CUdevice d)
{
    return d >= 0 && d < g_device_count;
}

static CUcontext cur_ctx(void)
{
    return t_ctx_depth > 0 ? t_ctx_stack[t_ctx_depth - 1] : NULL;
}

/* Called with the lock held: init + a live current context. */
static CUresult need_ctx(int *device)
{
    if (!g_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUcontext c = cur_ctx();
    if (!c || !handle_is(c, K_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (device)
        *device = c->device;
    return CUDA_SUCCESS;
}

/* Called with the lock held. */
static CUresult resolve_stream(CUstream h, struct CUstream_st **out)
{
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        *out = &g_default_stream;
        return CUDA_SUCCESS;
    }
    if (!handle_is(h, K_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    *out = h;
    return CUDA_SUCCESS;
}

/* Outstanding work a sync on this stream must wait for. */
static unsigned long long stream_pending(struct CUstream_st *s)
{
    /* The default (legacy) stream synchronises with every stream. */
    if (s == &g_default_stream)
        return g_busy_max;
    return s->busy_until;
}

/* CUDASIM_WORK_DIR: the work this process really ran, for the NVML simulator
 * (sim/nvml: "work_directory") to derive per-process and device utilisation
 * from. One append-only file per process, <dir>/<pid>, one line per piece of
 * work: "<start_ns> <end_ns>\n" on CLOCK_MONOTONIC. -1: not asked for. */
static int g_work_fd = -1;

static void work_log_open(void)
{
    const char *dir = getenv("CUDASIM_WORK_DIR");
    char path[4096];
    if (!dir || !*dir || snprintf(path, sizeof path, "%s/%d", dir, (int)getpid()) >= (int)sizeof path)
        return;
    g_work_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
}

static void stream_add_work(struct CUstream_st *s)
{
    unsigned long long start = max_u64(now_ns(), s->busy_until);
    unsigned long long t = start + g_kernel_ns;
    s->busy_until = t;
    g_busy_max = max_u64(g_busy_max, t);
    if (g_work_fd >= 0 && g_kernel_ns) {
        char line[48];
        int n = snprintf(line, sizeof line, "%llu %llu\n", start, t);
        if (write(g_work_fd, line, (size_t)n) != n) {
            close(g_work_fd); /* a full disk: the NVML side then sees less work, not wrong lines */
            g_work_fd = -1;
        }
    }
}

/* ------------------------------------------------------------ allocation */
/* Called with the lock held. */
static CUresult mem_alloc(unsigned long long *out, unsigned long long bytes, int kind, int device)
{
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (bytes > MAX_ALLOC || bytes > g_capacity - g_used[device] || g_used[device] > g_capacity)
        return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned long long span = (bytes + ALIGN - 1) & ~(ALIGN - 1);
    unsigned long long addr;
    if (kind == K_MEM_LEGACY) {
        if (span > LEGACY_LIMIT - g_next_legacy)
            return CUDA_ERROR_OUT_OF_MEMORY;
        addr = g_next_legacy;
        g_next_legacy += span;
    } else {
        addr = g_next_addr;
        g_next_addr += span;
    }
    if (tbl_insert(&g_mem, addr, bytes, kind, device) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g_used[device] += bytes;
    g_live_total += bytes;
    *out = addr;
    return CUDA_SUCCESS;
}

/* Called with the lock held.  handles: 1 = only cuMemCreate handles, 2 = only arrays,
 * 0 = only pointers. */
static CUresult mem_free(unsigned long long addr, int handles)
{
    struct entry *e = addr ? tbl_find(&g_mem, addr) : NULL;
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    if ((e->kind == K_MEM_HANDLE) != (handles == 1) || (e->kind == K_MEM_ARRAY) != (handles == 2))
        return CUDA_ERROR_INVALID_VALUE;
    g_used[e->device] -= e->size;
    g_live_total -= e->size;
    tbl_remove(&g_mem, addr);
    return CUDA_SUCCESS;
}

static CUresult do_alloc(unsigned long long *dptr, size_t bytes, int kind, int has_stream,
                         CUstream hStream)
{
    CUresult r;
    int dev = 0;
    LOCK();
    if ((r = need_ctx(&dev)) != CUDA_SUCCESS)
        goto out;
    if (!dptr) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (has_stream) {
        struct CUstream_st *s;
        if ((r = resolve_stream(hStream, &s)) != CUDA_SUCCESS)
            goto out;
    }
    r = mem_alloc(dptr, bytes, kind, dev);
out:
    UNLOCK();
    return r;
}

static CUresult do_free(unsigned long long addr, int has_stream, CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (has_stream) {
        struct CUstream_st *s;
        if ((r = resolve_stream(hStream, &s)) != CUDA_SUCCESS)
            goto out;
    }
    r = mem_free(addr, 0);
out:
    UNLOCK();
    return r;
}

/* ---------------------------------------------------------------- copies */
/* dev_mask: bit0 = dst is a device pointer, bit1 = src is a device pointer. */
static CUresult do_copy(unsigned long long dst, unsigned long long src, int dev_mask,
                        int has_stream, CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (((dev_mask & 1) && dst == 0) || ((dev_mask & 2) && src == 0)) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (has_stream) {
        struct CUstream_st *s;
        if ((r = resolve_stream(hStream, &s)) != CUDA_SUCCESS)
            goto out;
    }
out:
    UNLOCK();
    return r;
}

static CUresult do_copy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                             int has_stream, CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!handle_is(dctx, K_CTX) || !handle_is(sctx, K_CTX)) {
        r = CUDA_ERROR_INVALID_CONTEXT;
        goto out;
    }
    if (dst == 0 || src == 0) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (has_stream) {
        struct CUstream_st *s;
        if ((r = resolve_stream(hStream, &s)) != CUDA_SUCCESS)
            goto out;
    }
out:
    UNLOCK();
    return r;
}

/* -------------------------------------------------------------- launches */
static CUresult do_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!handle_is(f, K_FUNCTION)) {
        r = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    struct CUstream_st *s;
    if ((r = resolve_stream(hStream, &s)) != CUDA_SUCCESS)
        goto out;
    stream_add_work(s);
out:
    UNLOCK();
    return r;
}

static CUresult do_launch_ex(const CUlaunchConfig *c, CUfunction f)
{
    if (!c) {
        /* Still report NOT_INITIALIZED first, like every other entry point. */
        LOCK();
        CUresult r = g_initialized ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
        UNLOCK();
        return r;
    }
    return do_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                     c->blockDimZ, c->hStream);
}

static CUresult do_graph_launch(CUgraphExec g, CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!g) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    struct CUstream_st *s;
    if ((r = resolve_stream(hStream, &s)) != CUDA_SUCCESS)
        goto out;
    stream_add_work(s);
out:
    UNLOCK();
    return r;
}

/* ------------------------------------------------------- synchronisation */
static CUresult do_stream_sync(CUstream hStream)
{
    CUresult r;
    unsigned long long target = 0;
    LOCK();
    if ((r = need_ctx(NULL)) == CUDA_SUCCESS) {
        struct CUstream_st *s;
        if ((r = resolve_stream(hStream, &s)) == CUDA_SUCCESS)
            target = max_u64(now_ns() + g_sync_ns, stream_pending(s));
    }
    UNLOCK();
    if (r == CUDA_SUCCESS)
        sleep_until(target);
    return r;
}

static CUresult do_event_record(CUevent e, CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!handle_is(e, K_EVENT)) {
        r = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    struct CUstream_st *s;
    if ((r = resolve_stream(hStream, &s)) != CUDA_SUCCESS)
        goto out;
    e->at = stream_pending(s);
out:
    UNLOCK();
    return r;
}

/* ------------------------------------------------------------ contexts */
static CUresult ctx_push(CUcontext c)
{
    if (t_ctx_depth >= (int)(sizeof t_ctx_stack / sizeof t_ctx_stack[0]))
        return CUDA_ERROR_OUT_OF_MEMORY;
    t_ctx_stack[t_ctx_depth++] = c;
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized) {
        r = CUDA_ERROR_NOT_INITIALIZED;
        goto out;
    }
    if (!pctx) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (!dev_ok(dev)) {
        r = CUDA_ERROR_INVALID_DEVICE;
        goto out;
    }
    struct CUctx_st *c = handle_new(sizeof *c, K_CTX);
    if (!c) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    c->device = dev;
    if ((r = ctx_push(c)) != CUDA_SUCCESS) {
        handle_delete(c);
        goto out;
    }
    *pctx = c;
out:
    UNLOCK();
    return r;
}

/* ====================================================== exported: extras */
EXPORT const char *cudasimVersionString(void)
{
    return SIM_VERSION_STRING;
}

EXPORT unsigned long long cudasimLiveBytes(void)
{
    LOCK();
    unsigned long long v = g_live_total;
    UNLOCK();
    return v;
}

/* An MPS client: register with the simulated server of CUDA_MPS_PIPE_DIRECTORY. */
static void mps_attach(void)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char path[4096];
    if (!dir || !*dir)
        return;
    snprintf(path, sizeof path, "%s/server.pid", dir);
    if (access(path, F_OK) != 0)
        return; /* no server: not an MPS client */
    snprintf(path, sizeof path, "%s/clients", dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
    if (write(fd, line, (size_t)n) < 0) { /* best effort, like a refused connection */ }
    close(fd);
}

/* ================================================ exported: init/errors */
EXPORT CUresult cuInit(unsigned int Flags)
{
    CUresult r = CUDA_SUCCESS;
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (!g_initialized) {
        unsigned long long n = env_u64("CUDASIM_DEVICES", 1);
        g_device_count = n > MAX_DEVICES ? MAX_DEVICES : (int)n;
        g_capacity = env_u64("CUDASIM_MEMORY_BYTES", 80ULL << 30);
        g_kernel_ns = env_u64("CUDASIM_KERNEL_US", 0) * 1000ULL;
        g_sync_ns = env_u64("CUDASIM_SYNC_US", 0) * 1000ULL;
        if (g_device_count == 0)
            r = CUDA_ERROR_NO_DEVICE;
        else
            g_initialized = 1;
        if (g_initialized) {
            mps_attach();
            work_log_open();
        }
        for (int i = 0; i < MAX_DEVICES; i++)
            g_pools[i].device = i;
    }
    UNLOCK();
    return r;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDASIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

struct err_desc {
    CUresult code;
    const char *name;
    const char *text;
};

static const struct err_desc k_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
     "context already current"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED",
     "context is destroyed"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct err_desc *find_error(CUresult e)
{
    for (size_t i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++)
        if (k_errors[i].code == e)
            return &k_errors[i];
    return NULL;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct err_desc *d = find_error(error);
    if (!d) {
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = d->name;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct err_desc *d = find_error(error);
    if (!d) {
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = d->text;
    return CUDA_SUCCESS;
}

/* ================================================= exported: devices */
EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!device)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(ordinal))
        r = CUDA_ERROR_INVALID_DEVICE;
    else
        *device = ordinal;
    UNLOCK();
    return r;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!count)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        *count = g_device_count;
    UNLOCK();
    return r;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!name || len <= 0)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        r = CUDA_ERROR_INVALID_DEVICE;
    else
        snprintf(name, (size_t)len, "%s", "gpuledger simulated GPU");
    UNLOCK();
    return r;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!uuid)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        r = CUDA_ERROR_INVALID_DEVICE;
    else {
        /* "GPU-67706c73-696d-4000-8000-0000000000NN": 'g','p','l','s','i','m' + ordinal */
        static const unsigned char base[16] = {0x67, 0x70, 0x6c, 0x73, 0x69, 0x6d, 0x40, 0x00,
                                               0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
        for (int i = 0; i < 16; i++)
            uuid->bytes[i] = (char)base[i];
        uuid->bytes[14] = (char)((dev >> 8) & 0xff);
        uuid->bytes[15] = (char)(dev & 0xff);
    }
    UNLOCK();
    return r;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return get_uuid(uuid, dev);
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult r = get_uuid(uuid, dev);
    __asm__ volatile("" ::: "memory"); /* keep the body distinct from cuDeviceGetUuid */
    return r;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!bytes)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        r = CUDA_ERROR_INVALID_DEVICE;
    else
        *bytes = (size_t)g_capacity;
    UNLOCK();
    return r;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!pi || (int)attrib <= 0 || (int)attrib >= (int)CU_DEVICE_ATTRIBUTE_MAX)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        r = CUDA_ERROR_INVALID_DEVICE;
    else {
        int v = 0;
        switch (attrib) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
        case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1980000; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = 0x10 + dev; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
        default: v = 0; break;
        }
        *pi = v;
    }
    UNLOCK();
    return r;
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!pool_out)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        r = CUDA_ERROR_INVALID_DEVICE;
    else
        *pool_out = &g_pools[dev];
    UNLOCK();
    return r;
}

/* ================================================ exported: contexts */
EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    return ctx_create(pctx, dev);
}

EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev)
{
    (void)flags;
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, dev);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                               unsigned int flags, CUdevice dev)
{
    (void)flags;
    if (ctxCreateParams) {
        if (ctxCreateParams->cigParams)
            return CUDA_ERROR_NOT_SUPPORTED; /* CUDA-in-graphics is not simulated */
        if (ctxCreateParams->numExecAffinityParams < 0 ||
            (ctxCreateParams->numExecAffinityParams > 0 && !ctxCreateParams->execAffinityParams))
            return CUDA_ERROR_INVALID_VALUE;
    }
    return ctx_create(pctx, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!handle_is(ctx, K_CTX) || ctx->primary)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else {
        /* Drop it from this thread's stack (other threads see it as invalid). */
        int w = 0;
        for (int i = 0; i < t_ctx_depth; i++)
            if (t_ctx_stack[i] != ctx)
                t_ctx_stack[w++] = t_ctx_stack[i];
        t_ctx_depth = w;
        handle_delete(ctx);
    }
    UNLOCK();
    return r;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

/* The legacy (CUDA 3.x) forms: same arguments, still exported by the driver. */
EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    CUresult r = ctx_destroy(ctx);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    CUresult r = ctx_create(pctx, dev);
    __asm__ volatile("" ::: "memory");
    return r;
}

static CUresult primary_ctx_retain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!pctx)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        r = CUDA_ERROR_INVALID_DEVICE;
    else {
        if (!g_primary[dev]) {
            struct CUctx_st *c = handle_new(sizeof *c, K_CTX);
            if (!c) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                goto out;
            }
            c->device = dev;
            c->primary = 1;
            g_primary[dev] = c;
        }
        g_primary_refs[dev]++;
        *pctx = g_primary[dev];
    }
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    return primary_ctx_retain(pctx, dev);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!dev_ok(dev))
        r = CUDA_ERROR_INVALID_DEVICE;
    else if (g_primary_refs[dev] == 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        g_primary_refs[dev]--; /* the handle stays valid, like the real primary context */
    UNLOCK();
    return r;
}

static CUresult set_current(CUcontext ctx)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (ctx && !handle_is(ctx, K_CTX))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (t_ctx_depth == 0) {
        if (ctx)
            r = ctx_push(ctx);
    } else
        t_ctx_stack[t_ctx_depth - 1] = ctx;
    UNLOCK();
    return r;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    return set_current(ctx);
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!pctx)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        *pctx = cur_ctx();
    UNLOCK();
    return r;
}

static CUresult ctx_push_current(CUcontext ctx)
{
    CUresult r;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (!handle_is(ctx, K_CTX))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        r = ctx_push(ctx);
    UNLOCK();
    return r;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    return ctx_push_current(ctx);
}

EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
    CUresult r = ctx_push_current(ctx);
    __asm__ volatile("" ::: "memory");
    return r;
}

static CUresult ctx_pop_current(CUcontext *pctx)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (t_ctx_depth == 0 || !t_ctx_stack[t_ctx_depth - 1])
        r = CUDA_ERROR_INVALID_CONTEXT;
    else {
        CUcontext c = t_ctx_stack[--t_ctx_depth];
        if (pctx)
            *pctx = c;
    }
    UNLOCK();
    return r;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    return ctx_pop_current(pctx);
}

EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    CUresult r = ctx_pop_current(pctx);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    CUresult r;
    int dev = 0;
    LOCK();
    r = need_ctx(&dev);
    if (r == CUDA_SUCCESS) {
        if (!device)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            *device = dev;
    }
    UNLOCK();
    return r;
}

static CUresult ctx_sync(void)
{
    CUresult r;
    unsigned long long target = 0;
    LOCK();
    r = need_ctx(NULL);
    if (r == CUDA_SUCCESS)
        target = max_u64(now_ns() + g_sync_ns, g_busy_max);
    UNLOCK();
    if (r == CUDA_SUCCESS)
        sleep_until(target);
    return r;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    return ctx_sync();
}

/* ========================================== exported: streams/events */
EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!phStream || Flags > 1) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    struct CUstream_st *s = handle_new(sizeof *s, K_STREAM);
    if (!s) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    *phStream = s;
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!handle_is(hStream, K_STREAM)) {
        r = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    handle_delete(hStream);
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
    return do_stream_sync(hStream);
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    CUresult r = do_stream_sync(hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult r;
    (void)Flags;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!phEvent) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    struct CUevent_st *e = handle_new(sizeof *e, K_EVENT);
    if (!e) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    *phEvent = e;
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return do_event_record(hEvent, hStream);
}

EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    CUresult r = do_event_record(hEvent, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* flags: 0 or CU_EVENT_RECORD_EXTERNAL (1), which changes nothing here. */
EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    if (flags > 1)
        return CUDA_ERROR_INVALID_VALUE;
    return do_event_record(hEvent, hStream);
}

EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    if (flags > 1)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = do_event_record(hEvent, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuEventDestroy_v2(CUevent hEvent)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!handle_is(hEvent, K_EVENT)) {
        r = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    handle_delete(hEvent);
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
    CUresult r;
    unsigned long long target = 0;
    LOCK();
    if ((r = need_ctx(NULL)) == CUDA_SUCCESS) {
        if (!handle_is(hEvent, K_EVENT))
            r = CUDA_ERROR_INVALID_HANDLE;
        else
            target = max_u64(now_ns() + g_sync_ns, hEvent->at);
    }
    UNLOCK();
    if (r == CUDA_SUCCESS)
        sleep_until(target);
    return r;
}

/* ========================================= exported: modules/launches */
EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!module || !image) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    struct CUmod_st *m = handle_new(sizeof *m, K_MODULE);
    if (!m) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    *module = m;
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!hfunc || !name) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (!handle_is(hmod, K_MODULE)) {
        r = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    struct CUfunc_st *f = handle_new(sizeof *f, K_FUNCTION);
    if (!f) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    snprintf(f->name, sizeof f->name, "%s", name);
    *hfunc = f;
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream,
                               void **kernelParams, void **extra)
{
    (void)sharedMemBytes;
    (void)kernelParams;
    (void)extra;
    return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    (void)sharedMemBytes;
    (void)kernelParams;
    (void)extra;
    CUresult r =
        do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                          unsigned int gridDimZ, unsigned int blockDimX,
                                          unsigned int blockDimY, unsigned int blockDimZ,
                                          unsigned int sharedMemBytes, CUstream hStream,
                                          void **kernelParams)
{
    (void)sharedMemBytes;
    (void)kernelParams;
    CUresult r = do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void **kernelParams)
{
    (void)sharedMemBytes;
    (void)kernelParams;
    CUresult r = do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
    __asm__ volatile("nop" ::: "memory");
    return r;
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                 void **extra)
{
    (void)kernelParams;
    (void)extra;
    return do_launch_ex(config, f);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    (void)kernelParams;
    (void)extra;
    CUresult r = do_launch_ex(config, f);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return do_graph_launch(hGraphExec, hStream);
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    CUresult r = do_graph_launch(hGraphExec, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* ============================================== exported: allocation */
EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    unsigned long long a = 0;
    CUresult r = do_alloc(dptr ? &a : NULL, bytesize, K_MEM_LEGACY, 0, NULL);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)a;
    return r;
}

EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    return do_free((unsigned long long)dptr, 0, NULL);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return do_alloc(dptr, bytesize, K_MEM_DEVICE, 0, NULL);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
        LOCK();
        CUresult r = g_initialized ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
        UNLOCK();
        return r;
    }
    return do_alloc(dptr, bytesize, K_MEM_MANAGED, 0, NULL);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return do_alloc(dptr, bytesize, K_MEM_ASYNC, 1, hStream);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    CUresult r = do_alloc(dptr, bytesize, K_MEM_ASYNC, 1, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    if (!pool || pool < &g_pools[0] || pool >= &g_pools[MAX_DEVICES]) {
        LOCK();
        CUresult r = g_initialized ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
        UNLOCK();
        return r;
    }
    return do_alloc(dptr, bytesize, K_MEM_ASYNC, 1, hStream);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream hStream)
{
    return pool_alloc(dptr, bytesize, pool, hStream);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream)
{
    CUresult r = pool_alloc(dptr, bytesize, pool, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* kind: K_MEM_PITCH, or K_MEM_LEGACY for the 32-bit form. */
static CUresult pitch_alloc(unsigned long long *dptr, unsigned long long *pPitch, size_t WidthInBytes,
                            size_t Height, unsigned int ElementSizeBytes, int kind)
{
    CUresult r;
    int dev = 0;
    LOCK();
    if ((r = need_ctx(&dev)) != CUDA_SUCCESS)
        goto out;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (WidthInBytes > MAX_ALLOC || Height > MAX_ALLOC) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    unsigned long long pitch = ((unsigned long long)WidthInBytes + ALIGN - 1) & ~(ALIGN - 1);
    unsigned long long total = pitch * (unsigned long long)Height;
    if (Height != 0 && total / Height != pitch) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    if ((r = mem_alloc(dptr, total, kind, dev)) == CUDA_SUCCESS)
        *pPitch = pitch;
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                   size_t Height, unsigned int ElementSizeBytes)
{
    unsigned long long pitch = 0;
    CUresult r = pitch_alloc(dptr, pPitch ? &pitch : NULL, WidthInBytes, Height, ElementSizeBytes, K_MEM_PITCH);
    if (r == CUDA_SUCCESS)
        *pPitch = (size_t)pitch;
    return r;
}

EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                unsigned int Height, unsigned int ElementSizeBytes)
{
    unsigned long long a = 0, pitch = 0;
    CUresult r = pitch_alloc(dptr ? &a : NULL, pPitch ? &pitch : NULL, WidthInBytes, Height, ElementSizeBytes,
                             K_MEM_LEGACY);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)a;
        *pPitch = (unsigned int)pitch;
    }
    return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return do_free(dptr, 0, NULL);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return do_free(dptr, 1, hStream);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    CUresult r = do_free(dptr, 1, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult r = CUDA_SUCCESS;
    LOCK();
    if (!g_initialized) {
        r = CUDA_ERROR_NOT_INITIALIZED;
        goto out;
    }
    if (!handle || !prop || flags != 0 || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (!dev_ok(prop->location.id)) {
        r = CUDA_ERROR_INVALID_DEVICE;
        goto out;
    }
    r = mem_alloc(handle, size, K_MEM_HANDLE, prop->location.id);
out:
    UNLOCK();
    return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult r;
    LOCK();
    if (!g_initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else
        r = mem_free(handle, 1);
    UNLOCK();
    return r;
}

/* ================================================== exported: copies */
#define DST 1
#define SRC 2
#define HOSTPTR(p) ((unsigned long long)(uintptr_t)(p))

EXPORT CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
{
    (void)ByteCount;
    return do_copy(dstDevice, HOSTPTR(srcHost), DST, 0, NULL);
}

/* The other legacy (32-bit) copies. */
EXPORT CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    (void)ByteCount;
    return do_copy(HOSTPTR(dstHost), srcDevice, SRC, 0, NULL);
}

EXPORT CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    (void)ByteCount;
    return do_copy(dstDevice, srcDevice, DST | SRC, 0, NULL);
}

EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount,
                                  CUstream hStream)
{
    (void)ByteCount;
    return do_copy(dstDevice, HOSTPTR(srcHost), DST, 1, hStream);
}

EXPORT CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                                  CUstream hStream)
{
    (void)ByteCount;
    return do_copy(HOSTPTR(dstHost), srcDevice, SRC, 1, hStream);
}

EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                                  CUstream hStream)
{
    (void)ByteCount;
    return do_copy(dstDevice, srcDevice, DST | SRC, 1, hStream);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    (void)ByteCount;
    return do_copy(dstDevice, HOSTPTR(srcHost), DST, 0, NULL);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    (void)ByteCount;
    return do_copy(HOSTPTR(dstHost), srcDevice, SRC, 0, NULL);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    (void)ByteCount;
    return do_copy(dstDevice, srcDevice, DST | SRC, 0, NULL);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                     CUstream hStream)
{
    (void)ByteCount;
    return do_copy(dstDevice, HOSTPTR(srcHost), DST, 1, hStream);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream)
{
    (void)ByteCount;
    return do_copy(HOSTPTR(dstHost), srcDevice, SRC, 1, hStream);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                     size_t ByteCount, CUstream hStream)
{
    (void)ByteCount;
    return do_copy(dstDevice, srcDevice, DST | SRC, 1, hStream);
}

/* The per-thread-default-stream variants carry a compiler barrier so their
 * code never becomes byte-identical to the legacy-stream variants. */
EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    (void)ByteCount;
    CUresult r = do_copy(dstDevice, HOSTPTR(srcHost), DST, 0, NULL);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    (void)ByteCount;
    CUresult r = do_copy(HOSTPTR(dstHost), srcDevice, SRC, 0, NULL);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                     size_t ByteCount)
{
    (void)ByteCount;
    CUresult r = do_copy(dstDevice, srcDevice, DST | SRC, 0, NULL);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t ByteCount, CUstream hStream)
{
    (void)ByteCount;
    CUresult r = do_copy(dstDevice, HOSTPTR(srcHost), DST, 1, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                          CUstream hStream)
{
    (void)ByteCount;
    CUresult r = do_copy(HOSTPTR(dstHost), srcDevice, SRC, 1, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                          size_t ByteCount, CUstream hStream)
{
    (void)ByteCount;
    CUresult r = do_copy(dstDevice, srcDevice, DST | SRC, 1, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* Unified-addressing copies: both sides must be non-zero. */
EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    (void)ByteCount;
    CUresult r = do_copy(dst, src, DST | SRC, 0, NULL);
    __asm__ volatile("nop" ::: "memory"); /* differs from cuMemcpyDtoD_v2 */
    return r;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                              CUstream hStream)
{
    (void)ByteCount;
    CUresult r = do_copy(dst, src, DST | SRC, 1, hStream);
    __asm__ volatile("nop" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    (void)ByteCount;
    CUresult r = do_copy(dst, src, DST | SRC, 0, NULL);
    __asm__ volatile("nop; nop" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                   CUstream hStream)
{
    (void)ByteCount;
    CUresult r = do_copy(dst, src, DST | SRC, 1, hStream);
    __asm__ volatile("nop; nop" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                             CUcontext srcContext, size_t ByteCount)
{
    (void)ByteCount;
    return do_copy_peer(dstDevice, dstContext, srcDevice, srcContext, 0, NULL);
}

EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
                                  CUstream hStream)
{
    (void)ByteCount;
    return do_copy_peer(dstDevice, dstContext, srcDevice, srcContext, 1, hStream);
}

EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    (void)ByteCount;
    CUresult r = do_copy_peer(dstDevice, dstContext, srcDevice, srcContext, 0, NULL);
    __asm__ volatile("" ::: "memory");
    return r;
}

EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                       CUdeviceptr srcDevice, CUcontext srcContext,
                                       size_t ByteCount, CUstream hStream)
{
    (void)ByteCount;
    CUresult r = do_copy_peer(dstDevice, dstContext, srcDevice, srcContext, 1, hStream);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* ============================== for cudasim_families.c (cudasim_internal.h) */
SIM_HIDDEN CUresult sim_copy(unsigned long long dst, unsigned long long src, int dev_mask, int has_stream,
                             CUstream hStream)
{
    return do_copy(dst, src, dev_mask, has_stream, hStream);
}

SIM_HIDDEN CUresult sim_copy_peer(CUcontext dstContext, CUcontext srcContext, int has_stream, CUstream hStream)
{
    /* The pointers were checked by the caller (they may be arrays or host memory). */
    return do_copy_peer(1, dstContext, 1, srcContext, has_stream, hStream);
}

SIM_HIDDEN CUresult sim_memset(unsigned long long dst, int has_stream, CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (dst == 0) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    struct CUstream_st *s;
    if ((r = resolve_stream(has_stream ? hStream : NULL, &s)) != CUDA_SUCCESS)
        goto out;
    stream_add_work(s); /* a memset is work the device does */
out:
    UNLOCK();
    return r;
}

SIM_HIDDEN CUresult sim_array_create(unsigned long long *out, unsigned long long bytes)
{
    return do_alloc(out, bytes, K_MEM_ARRAY, 0, NULL);
}

SIM_HIDDEN CUresult sim_array_destroy(unsigned long long handle)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) == CUDA_SUCCESS)
        r = mem_free(handle, 2);
    UNLOCK();
    return r;
}

SIM_HIDDEN CUresult sim_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, CUstream hStream)
{
    return do_launch(f, gx, gy, gz, bx, by, bz, hStream);
}

SIM_HIDDEN CUresult sim_set_block_shape(CUfunction f, int x, int y, int z)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) != CUDA_SUCCESS)
        goto out;
    if (!handle_is(f, K_FUNCTION)) {
        r = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    if (x <= 0 || y <= 0 || z <= 0) {
        r = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    f->block[0] = (unsigned)x, f->block[1] = (unsigned)y, f->block[2] = (unsigned)z;
    f->block_set = 1;
out:
    UNLOCK();
    return r;
}

SIM_HIDDEN CUresult sim_launch_legacy(CUfunction f, int grid_width, int grid_height, CUstream hStream)
{
    unsigned block[3] = {0, 0, 0};
    LOCK();
    if (g_initialized && handle_is(f, K_FUNCTION) && f->block_set)
        memcpy(block, f->block, sizeof block);
    UNLOCK();
    if (grid_width <= 0 || grid_height <= 0)
        return do_launch(f, 0, 0, 0, 0, 0, 0, hStream); /* the usual checks, then INVALID_VALUE */
    /* No block shape set: the launch fails as the driver's does (a zero block). */
    return do_launch(f, (unsigned)grid_width, (unsigned)grid_height, 1, block[0], block[1], block[2], hStream);
}

SIM_HIDDEN CUresult sim_stream_query(CUstream hStream)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) == CUDA_SUCCESS) {
        struct CUstream_st *s;
        if ((r = resolve_stream(hStream, &s)) == CUDA_SUCCESS && stream_pending(s) > now_ns())
            r = CUDA_ERROR_NOT_READY;
    }
    UNLOCK();
    return r;
}

SIM_HIDDEN CUresult sim_event_query(CUevent hEvent)
{
    CUresult r;
    LOCK();
    if ((r = need_ctx(NULL)) == CUDA_SUCCESS) {
        if (!handle_is(hEvent, K_EVENT))
            r = CUDA_ERROR_INVALID_HANDLE;
        else if (hEvent->at > now_ns())
            r = CUDA_ERROR_NOT_READY;
    }
    UNLOCK();
    return r;
}

SIM_HIDDEN int sim_initialized(void)
{
    LOCK();
    int v = g_initialized;
    UNLOCK();
    return v;
}

/* ================================= internal entry points (not exported)
 * What cuGetProcAddress hands out instead of the exported symbol for the
 * names CUDASIM_PROC_BYPASS lists: the same work through the static helpers,
 * at addresses where no exported symbol starts - the way a driver that
 * returns pointers into an internal table would behave.  A uprobe on the
 * exported symbols never sees a call made through one of these. */
#define INTERNAL static __attribute__((noinline, used))
INTERNAL CUresult in_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                    CUstream s, void **params, void **extra)
{
    (void)shmem, (void)params, (void)extra;
    return do_launch(f, gx, gy, gz, bx, by, bz, s);
}
INTERNAL CUresult in_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                         CUstream s, void **params, void **extra)
{
    (void)shmem, (void)params, (void)extra;
    CUresult r = do_launch(f, gx, gy, gz, bx, by, bz, s);
    __asm__ volatile("" ::: "memory");
    return r;
}
INTERNAL CUresult in_cuGraphLaunch(CUgraphExec g, CUstream s) { return do_graph_launch(g, s); }
INTERNAL CUresult in_cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
    CUresult r = do_graph_launch(g, s);
    __asm__ volatile("" ::: "memory");
    return r;
}
INTERNAL CUresult in_cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return do_alloc(p, n, K_MEM_DEVICE, 0, NULL); }
INTERNAL CUresult in_cuMemFree_v2(CUdeviceptr p) { return do_free(p, 0, NULL); }
INTERNAL CUresult in_cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n)
{
    (void)n;
    return do_copy(d, HOSTPTR(h), DST, 0, NULL);
}
INTERNAL CUresult in_cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n)
{
    (void)n;
    return do_copy(HOSTPTR(h), d, SRC, 0, NULL);
}
INTERNAL CUresult in_cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    (void)n;
    return do_copy(d, s, DST | SRC, 0, NULL);
}
INTERNAL CUresult in_cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    (void)n;
    return do_copy(d, s, DST | SRC, 0, NULL);
}
INTERNAL CUresult in_cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    (void)n;
    return do_copy(d, HOSTPTR(h), DST, 1, s);
}
INTERNAL CUresult in_cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    (void)n;
    return do_copy(HOSTPTR(h), d, SRC, 1, s);
}
INTERNAL CUresult in_cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)n;
    return do_copy(d, s, DST | SRC, 1, st);
}
INTERNAL CUresult in_cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)n;
    CUresult r = do_copy(d, s, DST | SRC, 1, st);
    __asm__ volatile("" ::: "memory");
    return r;
}
INTERNAL CUresult in_cuStreamSynchronize(CUstream s) { return do_stream_sync(s); }
INTERNAL CUresult in_cuStreamSynchronize_ptsz(CUstream s)
{
    CUresult r = do_stream_sync(s);
    __asm__ volatile("" ::: "memory");
    return r;
}
INTERNAL CUresult in_cuCtxSynchronize(void) { return ctx_sync(); }
INTERNAL CUresult in_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    return primary_ctx_retain(pctx, dev);
}
INTERNAL CUresult in_cuCtxSetCurrent(CUcontext ctx) { return set_current(ctx); }
#undef INTERNAL

/* ============================================ exported: proc address */
struct proc_entry {
    const char *name;
    void *fn;
};

#define P(fn) {#fn, (void *)&fn}
static const struct proc_entry k_procs[] = {
    P(cuInit), P(cuDriverGetVersion), P(cuGetErrorName), P(cuGetErrorString),
    P(cuGetProcAddress), P(cuGetProcAddress_v2),
    P(cuDeviceGet), P(cuDeviceGetCount), P(cuDeviceGetName), P(cuDeviceGetUuid),
    P(cuDeviceGetUuid_v2), P(cuDeviceTotalMem_v2), P(cuDeviceGetAttribute),
    P(cuDeviceGetDefaultMemPool),
    P(cuCtxCreate_v2), P(cuCtxCreate_v3), P(cuCtxCreate_v4), P(cuCtxDestroy_v2),
    P(cuDevicePrimaryCtxRetain), P(cuDevicePrimaryCtxRelease_v2), P(cuCtxSetCurrent),
    P(cuCtxGetCurrent), P(cuCtxPushCurrent_v2), P(cuCtxPopCurrent_v2), P(cuCtxGetDevice),
    P(cuCtxSynchronize),
    P(cuStreamCreate), P(cuStreamDestroy_v2), P(cuStreamSynchronize),
    P(cuStreamSynchronize_ptsz), P(cuEventCreate), P(cuEventRecord), P(cuEventRecord_ptsz),
    P(cuEventRecordWithFlags), P(cuEventRecordWithFlags_ptsz),
    P(cuEventDestroy_v2), P(cuEventSynchronize),
    P(cuModuleLoadData), P(cuModuleGetFunction), P(cuLaunchKernel), P(cuLaunchKernel_ptsz),
    P(cuLaunchKernelEx), P(cuLaunchKernelEx_ptsz), P(cuGraphLaunch), P(cuGraphLaunch_ptsz),
    P(cuMemAlloc), P(cuMemFree), P(cuMemAlloc_v2), P(cuMemAllocManaged), P(cuMemAllocAsync),
    P(cuMemAllocAsync_ptsz), P(cuMemAllocFromPoolAsync), P(cuMemAllocPitch_v2),
    P(cuMemFree_v2), P(cuMemFreeAsync), P(cuMemFreeAsync_ptsz), P(cuMemCreate),
    P(cuMemRelease),
    P(cuMemcpyHtoD), P(cuMemcpyHtoD_v2), P(cuMemcpyDtoH_v2), P(cuMemcpyDtoD_v2),
    P(cuMemcpyHtoDAsync_v2), P(cuMemcpyDtoHAsync_v2), P(cuMemcpyDtoDAsync_v2),
    P(cuMemcpyHtoD_v2_ptds), P(cuMemcpyDtoH_v2_ptds), P(cuMemcpyDtoD_v2_ptds),
    P(cuMemcpyHtoDAsync_v2_ptsz), P(cuMemcpyDtoHAsync_v2_ptsz), P(cuMemcpyDtoDAsync_v2_ptsz),
    P(cuMemcpy), P(cuMemcpyAsync), P(cuMemcpy_ptds), P(cuMemcpyAsync_ptsz), P(cuMemcpyPeer),
    P(cuMemcpyPeerAsync), P(cuMemcpyPeer_ptds), P(cuMemcpyPeerAsync_ptsz),
    /* Legacy forms the real driver still exports. */
    P(cuCtxCreate), P(cuCtxDestroy), P(cuCtxPushCurrent), P(cuCtxPopCurrent),
    P(cuLaunchCooperativeKernel), P(cuLaunchCooperativeKernel_ptsz), P(cuMemAllocFromPoolAsync_ptsz),
    P(cuMemAllocPitch), P(cuMemcpyDtoH), P(cuMemcpyDtoD), P(cuMemcpyHtoDAsync), P(cuMemcpyDtoHAsync),
    P(cuMemcpyDtoDAsync),
};
#undef P

#define I(fn) {#fn, (void *)&in_##fn}
static const struct proc_entry k_internal_procs[] = {
    I(cuLaunchKernel), I(cuLaunchKernel_ptsz), I(cuGraphLaunch), I(cuGraphLaunch_ptsz),
    I(cuMemAlloc_v2), I(cuMemFree_v2), I(cuMemcpyHtoD_v2), I(cuMemcpyDtoH_v2), I(cuMemcpyDtoD_v2),
    I(cuMemcpy), I(cuMemcpyHtoDAsync_v2), I(cuMemcpyDtoHAsync_v2), I(cuMemcpyDtoDAsync_v2),
    I(cuMemcpyAsync), I(cuStreamSynchronize), I(cuStreamSynchronize_ptsz),
    I(cuCtxSynchronize), I(cuDevicePrimaryCtxRetain), I(cuCtxSetCurrent),
};
#undef I

/* Whether CUDASIM_PROC_BYPASS ("all", or a comma-separated list of exact
 * entry-point names) asks for `name` to be handed out as its internal form.
 * Read at each lookup: lookups are rare, and tests set it per process. */
static int bypassed(const char *name)
{
    const char *list = getenv("CUDASIM_PROC_BYPASS");
    if (!list || !*list)
        return 0;
    if (strcmp(list, "all") == 0)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

static void *find_internal_proc(const char *name)
{
    for (size_t i = 0; i < sizeof k_internal_procs / sizeof k_internal_procs[0]; i++)
        if (strcmp(k_internal_procs[i].name, name) == 0)
            return k_internal_procs[i].fn;
    return NULL;
}

static void *find_proc(const char *name)
{
    if (bypassed(name)) {
        void *internal = find_internal_proc(name);
        if (internal)
            return internal;
    }
    for (size_t i = 0; i < sizeof k_procs / sizeof k_procs[0]; i++)
        if (strcmp(k_procs[i].name, name) == 0)
            return k_procs[i].fn;
    return sim_find_family_proc(name);
}

/*
 * Resolution order, mimicking the real driver: with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the per-thread variants
 * (<name>_v2_ptds, <name>_v2_ptsz, <name>_ptds, <name>_ptsz) are tried first;
 * then <name>_v2 (when cudaVersion >= 3020, the first _v2 release); then the
 * exact <name>.  So "cuMemAlloc" @ 12000 yields cuMemAlloc_v2, while
 * "cuMemAlloc_v2" also resolves (exact match).
 */
static CUresult get_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn || flags > 3)
        return CUDA_ERROR_INVALID_VALUE;
    char buf[160];
    void *fn = NULL;
    size_t n = strlen(symbol);
    if (n < 100) {
        if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
            static const char *const sfx[] = {"_v2_ptds", "_v2_ptsz", "_ptds", "_ptsz"};
            for (size_t i = 0; !fn && i < 4; i++) {
                snprintf(buf, sizeof buf, "%s%s", symbol, sfx[i]);
                fn = find_proc(buf);
            }
        }
        if (!fn && cudaVersion >= 3020) {
            snprintf(buf, sizeof buf, "%s_v2", symbol);
            fn = find_proc(buf);
        }
    }
    if (!fn)
        fn = find_proc(symbol);
    *pfn = fn;
    if (status)
        *status = fn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}
