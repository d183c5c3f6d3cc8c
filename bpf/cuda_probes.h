/* The contract between bpf/cuda_probes.bpf.c and the agent's probes
 * (src/probes): fixed-width C types that both sides include. Units are in the
 * field names or comments. Keep this file free of kernel or libc headers so
 * C++ can include it as-is. */
#ifndef GPULEDGER_CUDA_PROBES_H
#define GPULEDGER_CUDA_PROBES_H

#include "lib/abi_types.h"
#include "lib/events.h"

/* Memcpy direction, the index into the per-direction counter arrays. */
enum gl_direction {
  GL_DIR_HTOD = 0,
  GL_DIR_DTOH = 1,
  GL_DIR_DTOD = 2,
  GL_DIR_PEER = 3,
  GL_DIR_UNKNOWN = 4, /* cuMemcpy on unified addresses: the driver decides */
  GL_DIR_COUNT = 5,
};

/* What a probed entry point does, which decides how its arguments are read. */
enum gl_call_kind {
  GL_KIND_OTHER = 0,       /* cuInit, context calls: only errors and process registration */
  GL_KIND_LAUNCH = 1,      /* cuLaunchKernel(f, gx, gy, gz, bx, by, bz(stack), ...) */
  GL_KIND_LAUNCH_EX = 2,   /* cuLaunchKernelEx(const CUlaunchConfig *config, ...) */
  GL_KIND_GRAPH = 3,       /* cuGraphLaunch(exec, stream) */
  GL_KIND_ALLOC = 4,       /* (CUdeviceptr *out, size_t bytes, ...) */
  GL_KIND_ALLOC_PITCH = 5, /* (CUdeviceptr *out, size_t *pitch, size_t width, size_t height, ...) */
  GL_KIND_FREE = 6,        /* (CUdeviceptr ptr, ...) or a cuMemCreate handle */
  GL_KIND_MEMCPY = 7,      /* bytes in the argument named by the cookie */
  GL_KIND_SYNC = 8,        /* time between entry and return is time blocked */
  GL_KIND_CONTEXT = 9,     /* context bookkeeping: which device a thread's calls go to */
  /* CUDA runtime entry points (libcudart) whose arguments differ from the driver's: */
  GL_KIND_RT_LAUNCH = 10,  /* cudaLaunchKernel(func, dim3 grid, dim3 block, ...): dim3 by value, 2 registers each */
  GL_KIND_RT_MEMCPY = 11,  /* cudaMemcpy[Async](dst, src, bytes, enum cudaMemcpyKind kind, ...) */
  GL_KIND_RT_SET_DEVICE = 12, /* cudaSetDevice(int device): the thread's runtime device */
  /* Copies described by a struct (layouts of the real cuda.h; legacy forms: 32-bit fields):
   * bytes are WidthInBytes x Height [x Depth], the direction from the memory types. */
  GL_KIND_MEMCPY_2D = 13,      /* cuMemcpy2D*(const CUDA_MEMCPY2D *), cuMemcpy2DUnaligned* */
  GL_KIND_MEMCPY_3D = 14,      /* cuMemcpy3D*(const CUDA_MEMCPY3D *) */
  GL_KIND_MEMCPY_3D_PEER = 15, /* cuMemcpy3DPeer*(const CUDA_MEMCPY3D_PEER *): between contexts */
  GL_KIND_QUERY = 16,          /* cuStreamQuery, cuEventQuery: CUDA_SUCCESS reports completion */
  GL_KIND_LAUNCH_LEGACY = 17,  /* cuLaunch(f), cuLaunchGrid[Async](f, w, h[, stream]): block from cuFuncSetBlockShape */
  GL_KIND_BLOCK_SHAPE = 18,    /* cuFuncSetBlockShape(f, x, y, z): bookkeeping for legacy launches */
  GL_KIND_LAUNCH_MULTI = 19,   /* cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, n, flags) */
  GL_KIND_ARRAY_CREATE = 20,   /* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate(out, desc[, levels]) */
  GL_KIND_MEMSET = 21,         /* cuMemsetD{8,16,32}[Async], cuMemsetD2D{8,16,32}[Async] */
  GL_KIND_EXPORT_TABLE = 22,   /* cuGetExportTable(const void **table, const CUuuid *id): counted by id */
  GL_KIND_MEMCPY_BATCH = 23,   /* cuMemcpyBatchAsync(dsts, srcs, size_t *sizes, count, ...): the sum of sizes */
  GL_KIND_MEMCPY_3D_BATCH = 24, /* cuMemcpy3DBatchAsync(n, CUDA_MEMCPY3D_BATCH_OP *ops, ...): the extents */
  GL_KIND_EVENT_RECORD = 25,   /* cuEventRecord[WithFlags](event, stream): the stream an event waits for */
};

/* What a GL_KIND_SYNC or GL_KIND_QUERY entry point waits for (the cookie's
 * direction bits): its return (a query: CUDA_SUCCESS) ends the busy spans of
 * that work, whichever thread launched it. */
enum gl_sync_target {
  GL_SYNC_STREAM = 0,  /* (CUstream, ...): the stream's work (0, legacy, per-thread: the default stream) */
  GL_SYNC_CONTEXT = 1, /* the calling thread's current context: all its streams */
  GL_SYNC_EVENT = 2,   /* (CUevent, ...): the stream the event was last recorded on */
};
/* Bit 25 of a copy's cookie: a synchronous copy (no Async in its name), which
 * returns once the default stream's work before it is done. */
#define GL_COOKIE_SYNC_COPY_BIT (1ULL << 25)
#define GL_COOKIE_SYNC_COPY(c) ((gl_u32)(((c) >> 25) & 0x1))
/* Bit 26: counted at entry, with no return probe - an asynchronous copy or a
 * memset, whose return would only say it succeeded (issue 28 item 4): like a
 * launch, it counts as attempted. */
#define GL_COOKIE_AT_ENTRY_BIT (1ULL << 26)
#define GL_COOKIE_AT_ENTRY(c) ((gl_u32)(((c) >> 26) & 0x1))

/* The size-argument bits of a GL_KIND_ARRAY_CREATE cookie: which descriptor. */
enum gl_array_shape {
  GL_ARRAY_2D = 0,      /* CUDA_ARRAY_DESCRIPTOR: Width, Height, Format, NumChannels */
  GL_ARRAY_3D = 1,      /* CUDA_ARRAY3D_DESCRIPTOR: Width, Height, Depth, Format, NumChannels, Flags */
  GL_ARRAY_MIPMAP = 2,  /* a CUDA_ARRAY3D_DESCRIPTOR and numMipmapLevels (3rd argument) */
};
/* A GL_KIND_MEMSET cookie: the size argument is the element count (1D) or the
 * width in elements (2D, the height follows it); the direction bits carry the
 * element size in bytes, and bit 3 of them says 2D. */
#define GL_MEMSET_2D 0x8
/* A GL_KIND_LAUNCH_LEGACY cookie: size argument 1 means the grid's width and
 * height are arguments 1 and 2 (cuLaunchGrid*); 0 means a 1x1 grid (cuLaunch). */

/* --runtime-probes: how the runtime-level handlers count (see docs/runtime-probes.md).
 * off: no runtime probes. auto: the driver level counts; a runtime call that
 * completes with no driver probe of its class firing on its thread is counted
 * at the runtime level (and flags its process). on: every runtime call is
 * counted at the runtime level; driver probes skip the calls nested in one. */
enum gl_runtime_mode {
  GL_RUNTIME_OFF = 0,
  GL_RUNTIME_AUTO = 1,
  GL_RUNTIME_ON = 2,
};
/* Runtime entry points get call ids from here up (errors are named by id);
 * the driver's names take the ids below. */
#define GL_RUNTIME_CALL_BASE 768

/* What a GL_KIND_CONTEXT entry point does to the calling thread's contexts
 * (carried in the cookie's direction bits). */
enum gl_context_op {
  GL_CTX_CREATE = 0,  /* cuCtxCreate*(CUcontext *out, ..., CUdevice dev): new, pushed */
  GL_CTX_RETAIN = 1,  /* cuDevicePrimaryCtxRetain(CUcontext *out, CUdevice dev): known, not current */
  GL_CTX_SET = 2,     /* cuCtxSetCurrent(ctx): replaces the top of the stack */
  GL_CTX_PUSH = 3,    /* cuCtxPushCurrent(ctx) */
  GL_CTX_POP = 4,     /* cuCtxPopCurrent(CUcontext *out) */
  GL_CTX_DESTROY = 5, /* cuCtxDestroy(ctx): popped if current */
};

/* A probe's BPF cookie packs everything the handler needs to know about the
 * entry point it sits on, so one program serves every entry point of a kind:
 *   bits  0..7  kind (enum gl_call_kind)
 *   bits 32..41 call id: index of the entry point name in the agent's table
 *   bits 16..19 argument index holding the byte count (memcpy) or device (context)
 *   bits 20..23 direction (enum gl_direction, memcpy) or enum gl_context_op
 *   bit  24     legacy form: 32-bit pointers and sizes (cuMemAlloc, cuMemcpyHtoD, ...) */
#define GL_COOKIE_KIND(c) ((gl_u32)((c)&0xff))
#define GL_COOKIE_CALL(c) ((gl_u32)(((c) >> 32) & 0x3ff))
#define GL_COOKIE_SIZE_ARG(c) ((gl_u32)(((c) >> 16) & 0xf))
#define GL_COOKIE_DIR(c) ((gl_u32)(((c) >> 20) & 0xf))
#define GL_COOKIE_LEGACY(c) ((gl_u32)(((c) >> 24) & 0x1))
#define GL_MAKE_COOKIE(kind, call, size_arg, dir, legacy)                                 \
  ((gl_u64)(kind) | ((gl_u64)(call) << 32) | ((gl_u64)(size_arg) << 16) | ((gl_u64)(dir) << 20) | \
   ((gl_u64)(legacy) << 24))
#define GL_COOKIE_CTX_OP(c) GL_COOKIE_DIR(c)
#define GL_MAX_CALLS 1024
/* The call_names map: the name each call id was given, so an agent that takes
 * over pinned maps and links (whose keys and cookies carry the ids) names
 * them as the agent that handed them out did. Written by the agent only. */
#define GL_CALL_NAME_LEN 64
struct gl_call_name {
  char name[GL_CALL_NAME_LEN];
};

/* Device ordinals as the process numbers them (CUDA's, after
 * CUDA_VISIBLE_DEVICES); the agent maps them to physical GPUs. */
#define GL_DEVICE_UNKNOWN 0xffffffffu
#define GL_MAX_DEVICES 16 /* per-process live-bytes slots; one more for unknown */
#define GL_CTX_STACK 8

/* Workload key: the cgroup v2 id, or - on hosts whose processes sit in the v2
 * root (cgroup v1 only) - the id of the process's v1 cgroup with this bit set. */
#define GL_CGROUP_V1_BIT (1ULL << 63)

/* Counters are kept per workload and device ordinal. */
struct gl_workload_key {
  gl_u64 cgroup_key;
  gl_u32 device; /* GL_DEVICE_UNKNOWN when no current context was seen */
  gl_u32 pad;
};

/* Per-workload counters, one shared copy updated with atomic adds. Monotonic. */
struct gl_counters {
  gl_u64 launches;
  gl_u64 launched_threads;
  gl_u64 graph_launches;
  gl_u64 allocations;
  gl_u64 allocated_bytes;
  gl_u64 freed_bytes; /* explicit frees plus what a process held when it exited */
  gl_u64 memcpy_bytes[GL_DIR_COUNT];
  gl_u64 memcpy_calls[GL_DIR_COUNT];
  gl_u64 syncs;
  gl_u64 sync_ns; /* nanoseconds blocked in synchronisation calls */
  gl_u64 untracked_frees; /* frees of pointers allocated before the agent attached */
  gl_u64 busy_ns; /* launch-to-completion spans: first launch after a sync until a sync returns */
  gl_u64 memsets;      /* cuMemsetD* calls that succeeded */
  gl_u64 memset_bytes; /* bytes they set (elements x element size) */
};

/* cuFuncSetBlockShape's block, per process and function, for the legacy
 * launches (cuLaunch, cuLaunchGrid*) that take no block of their own. */
struct gl_func_key {
  gl_u32 tgid;
  gl_u32 pad;
  gl_u64 func;
};
struct gl_block_shape {
  gl_u32 x, y, z;
  gl_u32 pad;
};

/* cuGetExportTable requests, per workload and table id (a CUuuid): which
 * undocumented driver tables a runtime asks for. */
struct gl_export_table_key {
  gl_u64 cgroup_key;
  gl_u8 table[16];
};

struct gl_error_key {
  gl_u64 cgroup_key;
  gl_u32 call_id;
  gl_u32 device;
};

/* One live allocation, keyed by process and device pointer (or VMM handle). */
struct gl_alloc_key {
  gl_u32 tgid;
  gl_u32 pad;
  gl_u64 ptr;
};
struct gl_alloc_value {
  gl_u64 bytes;
  gl_u64 cgroup_key;
  gl_u64 proc_start_ns; /* tells a reused PID's pointers from its predecessor's */
  gl_u32 device;
  gl_u32 pad;
};

/* A context a process created or retained, and its device. */
struct gl_ctx_key {
  gl_u32 tgid;
  gl_u32 pad;
  gl_u64 ctx;
};

/* A call's arguments, kept from its entry until its return. */
struct gl_call_stash {
  gl_u64 cookie; /* 0: no call in flight */
  gl_u64 start_ns;
  gl_u64 a0, a1, a2;
};

/* Per thread: its context stack (top is current), the current context's
 * device, the start of its open busy span, and the call in flight. One
 * lookup on a return finds all of it. */
/* A CUDA runtime call in flight on a thread: its arguments, and whether a
 * driver probe of the same class fired inside it (per-thread de-duplication). */
struct gl_runtime_call {
  struct gl_call_stash call; /* call.cookie 0: none in flight */
  gl_u64 entry_sp;           /* stack pointer at entry: tells nested and stale calls apart */
  gl_u32 driver_seen;
  gl_u32 pad;
};

/* Busy spans per process and context, one slot per stream (the last slot
 * takes every stream beyond the others and is ended only by a context-wide
 * wait). A launch opens its stream's span unless one is open; any thread's
 * wait for that work ends it (gl_sync_target), as do a successful synchronous
 * copy (the default stream), the context's destruction and the process's
 * exit. Ended spans add to gl_counters::busy_ns of the workload and device
 * that opened them; open ones are read by the agent and counted to date, so a
 * span crossing windows is spread over them (docs/ledger.md). */
#define GL_SPAN_STREAMS 8
#define GL_SPAN_OVERFLOW_STREAM (~0ULL)
struct gl_span_key {
  gl_u32 tgid;
  gl_u32 pad;
  gl_u64 ctx; /* the launching thread's current context; 0 when none was seen */
};
struct gl_open_spans {
  gl_u64 stream[GL_SPAN_STREAMS];   /* the stream of each slot (0: the default stream) */
  gl_u64 start_ns[GL_SPAN_STREAMS]; /* bpf_ktime_get_ns() at the launch that opened it; 0: none open */
  gl_u64 cgroup_key;                /* the workload and device whose busy_ns it adds to */
  gl_u32 device;
  gl_u32 pad;
};
/* The stream an event was last recorded on, per process and event. */
struct gl_event_key {
  gl_u32 tgid;
  gl_u32 pad;
  gl_u64 event;
};
struct gl_event_stream {
  gl_u64 ctx;
  gl_u64 stream;
};

struct gl_thread_state {
  gl_u64 ctx_stack[GL_CTX_STACK];
  gl_u32 depth;
  gl_u32 device;
  gl_u64 span_start_ns; /* unused since spans are per stream and context (gl_open_spans) */
  struct gl_call_stash call;
  gl_u32 process_known; /* the process is in the processes map: no need to look */
  gl_u32 runtime_device_plus1; /* cudaSetDevice's ordinal + 1; 0: never called (the runtime uses 0) */
  struct gl_runtime_call runtime;
};

/* A process seen making CUDA calls. */
struct gl_proc_state {
  gl_u64 start_ns; /* task start time (boot-based ns) */
  gl_u64 cgroup_key;
  gl_u64 live_bytes[GL_MAX_DEVICES + 1]; /* by device ordinal; the last slot: unknown or beyond */
  gl_u64 init_failed; /* its last cuInit failed: later failures are that one failure again */
};

/* Self-accounting, a per-CPU array indexed by these. */
enum gl_stat {
  GL_STAT_EVENTS_DROPPED = 0,     /* ring buffer full */
  GL_STAT_WORKLOADS_FULL = 1,     /* workload map full: counted under the overflow key 0 */
  GL_STAT_ALLOCS_UNTRACKED = 2,   /* allocation map full: its free cannot be paired */
  GL_STAT_PROCS_FULL = 3,         /* process map full */
  GL_STAT_STASH_MISSING = 4,      /* return without its entry (attached mid-call) */
  GL_STAT_WORKLOADS_NOMEM = 5,    /* a new workload entry could not be inserted below capacity: counted under key 0 */
  GL_STAT_THREADS_FULL = 6,       /* thread map full: that thread's device and spans are unknown */
  GL_STAT_RUNTIME_COUNTED = 7,    /* calls counted by the runtime-level probes */
  GL_STAT_RUNTIME_LEFT_TO_DRIVER = 8, /* runtime calls the driver-level probes counted (de-duplicated) */
  GL_STAT_ARRAY_SIZE_UNKNOWN = 9, /* an array of a format whose element size is not known: counted, 0 bytes */
  GL_STAT_EXPORT_TABLES_FULL = 10, /* export-table map full: that request is not counted by id */
  GL_STAT_FAILED_AFTER_INIT_FAILED = 11, /* calls that failed after the process's cuInit had: not counted again */
  GL_STAT_SPANS_FULL = 12,        /* open-span map full: that context's launches open no span */
  GL_STAT_SPAN_STREAMS_FULL = 13, /* a context's stream slots full: the launch went to its overflow slot */
  GL_STAT_COUNT = 14,
};

#define GL_PATH_DEPTH 12
#define GL_NAME_LEN 128

/* The cgroup's path, captured in the kernel so a cgroup that is gone before
 * the agent looks can still be named. components[0] is the leaf. */
struct gl_new_workload_event {
  struct gl_event_header h;
  gl_u32 depth;     /* number of components filled */
  gl_u32 truncated; /* deeper than GL_PATH_DEPTH */
  char components[GL_PATH_DEPTH][GL_NAME_LEN];
};

struct gl_proc_event {
  struct gl_event_header h;
  gl_u64 start_ns;
  gl_u64 released_bytes; /* exit: what the process still held */
};

#endif
