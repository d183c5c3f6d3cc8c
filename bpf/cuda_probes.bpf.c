// SPDX-License-Identifier: GPL-2.0
/* CUDA driver API attribution: uprobes on libcuda entry points, counted per
 * workload (cgroup) in preallocated maps. Userspace reads the maps; only rare events
 * (a new workload, a process starting or ending its CUDA life) go through the
 * ring buffer, so the hot path never talks to userspace.
 *
 * One program per handler shape; the attach cookie tells it which entry point
 * it sits on (see gpuledger_abi.h). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.h"
#include "cuda_struct_layouts.h"
#include "gpuledger_abi.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the agent before load. */
const volatile __u64 cgroup_v2_root_id = 1;
const volatile __u32 v1_fallback_subsys = 0xffffffff; /* css_set.subsys index, or none */
const volatile bool exact_threads_legacy = false;
const volatile __u32 runtime_mode = GL_RUNTIME_OFF; /* enum gl_runtime_mode */

/* Preallocated, one shared copy per entry, counted with atomic adds. Not
 * BPF_F_NO_PREALLOC: an entry allocated at a workload's first call comes from
 * a per-CPU cache that a burst of new workloads empties faster than it is
 * refilled, and the call fails with ENOMEM into the overflow bucket (2,977 of
 * 10,000 first calls). Preallocated, an insert fails only when the map is
 * full. Not per-CPU: preallocated, that costs max_entries x CPUs x 136 bytes
 * (285 MiB at 16,384 entries on 128 CPUs); shared, ~3.3 MiB whatever the CPU
 * count, and no slower per call (docs/performance.md, "the workload map"). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384); /* resized by the agent (--max-workloads) */
  __type(key, struct gl_workload_key);
  __type(value, struct gl_counters);
} workload_counters SEC(".maps");

/* Preallocated for the same reason: a burst's first errors must not be lost. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct gl_error_key);
  __type(value, __u64);
} call_errors SEC(".maps");

/* Read and written by the agent only (gpuledger_abi.h); pinned with the rest. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, GL_MAX_CALLS);
  __type(key, __u32);
  __type(value, struct gl_call_name);
} call_names SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 262144);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct gl_alloc_key);
  __type(value, struct gl_alloc_value);
} live_allocations SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32);
  __type(value, struct gl_proc_state);
} processes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct gl_ctx_key);
  __type(value, __u32);
} context_devices SEC(".maps");

/* A plain preallocated hash, the cheapest lookup on the hot path: every
 * thread's exit deletes its entry (gl_process_exit), so none is left behind. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 32768);
  __type(key, __u64);
  __type(value, struct gl_thread_state);
} threads SEC(".maps");

/* Legacy launches' blocks (cuFuncSetBlockShape). LRU: a process that sets
 * shapes on endless functions only evicts its own oldest ones. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct gl_func_key);
  __type(value, struct gl_block_shape);
} func_blocks SEC(".maps");

/* cuGetExportTable requests by workload and table id. Preallocated and
 * bounded: once full, a request is counted in the stats, not by id. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct gl_export_table_key);
  __type(value, __u64);
} export_tables SEC(".maps");

/* Open busy spans per process and context (gpuledger_abi.h). Preallocated:
 * a launch's span must not fail for want of memory; once full, a context's
 * launches open none (GL_STAT_SPANS_FULL). A process's entries go at its exit. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct gl_span_key);
  __type(value, struct gl_open_spans);
} open_spans SEC(".maps");

/* The stream each event was last recorded on. LRU: a process recording
 * endless events evicts its own oldest; a wait on an evicted event ends no
 * span (the span then runs on until another wait ends it: never shorter). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct gl_event_key);
  __type(value, struct gl_event_stream);
} event_streams SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, GL_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
} events SEC(".maps");

static const struct gl_counters zero_counters;

static __always_inline void count_stat(__u32 which) {
  __u64 *v = bpf_map_lookup_elem(&stats, &which);
  if (v) __sync_fetch_and_add(v, 1);
}

static __always_inline struct kernfs_node *v1_cgroup_kn(struct task_struct *task) {
  struct cgroup_subsys_state *css;
  __u32 idx = v1_fallback_subsys;
  if (idx >= bpf_core_field_size(task->cgroups->subsys) / sizeof(void *)) return NULL;
  css = BPF_CORE_READ(task, cgroups, subsys[idx]);
  return css ? BPF_CORE_READ(css, cgroup, kn) : NULL;
}

/* The workload key of the calling task: its cgroup v2 id, unless it sits in the
 * v2 root on a host whose workloads live in cgroup v1 only. */
static __always_inline __u64 current_cgroup_key(void) {
  __u64 id = bpf_get_current_cgroup_id();
  if (id != cgroup_v2_root_id || v1_fallback_subsys == 0xffffffff) return id;
  struct kernfs_node *kn = v1_cgroup_kn((struct task_struct *)bpf_get_current_task());
  if (!kn) return id;
  return BPF_CORE_READ(kn, id) | GL_CGROUP_V1_BIT;
}

/* Rare: the first call of a new workload. Capture its cgroup path now, while
 * the cgroup surely exists, so even a short-lived pod can be named later. */
static __noinline void emit_new_workload(__u64 key) {
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  struct kernfs_node *kn;
  struct gl_new_workload_event *ev;

  ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
  if (!ev) {
    count_stat(GL_STAT_EVENTS_DROPPED);
    return;
  }
  ev->h.type = GL_EV_NEW_WORKLOAD;
  ev->h.tgid = bpf_get_current_pid_tgid() >> 32;
  ev->h.cgroup_key = key;
  ev->depth = 0;
  ev->truncated = 0;
  if (key & GL_CGROUP_V1_BIT)
    kn = v1_cgroup_kn(task);
  else
    kn = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);
  for (int i = 0; i < GL_PATH_DEPTH; i++) {
    if (!kn) break;
    struct kernfs_node *parent = gl_kernfs_parent(kn);
    if (!parent) break; /* the root's own name is not part of the path */
    bpf_probe_read_kernel_str(ev->components[i], GL_NAME_LEN, BPF_CORE_READ(kn, name));
    ev->depth = i + 1;
    kn = parent;
  }
  if (kn && gl_kernfs_parent(kn)) ev->truncated = 1;
  bpf_ringbuf_submit(ev, 0);
}

static __always_inline struct gl_counters *counters_for(__u64 cgroup_key, __u32 device) {
  struct gl_workload_key key = {.cgroup_key = cgroup_key, .device = device};
  struct gl_counters *c = bpf_map_lookup_elem(&workload_counters, &key);
  if (c) return c;
  long err = bpf_map_update_elem(&workload_counters, &key, &zero_counters, BPF_NOEXIST);
  if (err == 0) {
    emit_new_workload(cgroup_key);
  } else if (err != -17 /* EEXIST: another CPU won the race */) {
    /* E2BIG: the map is full. Anything else (ENOMEM from a map that is not
     * preallocated, EBUSY from a bucket locked on this CPU) is the kernel
     * failing to insert an entry before the map is full. */
    count_stat(err == -7 ? GL_STAT_WORKLOADS_FULL : GL_STAT_WORKLOADS_NOMEM);
    key.cgroup_key = 0; /* the overflow bucket, created by the agent before attach */
    key.device = GL_DEVICE_UNKNOWN;
  }
  return bpf_map_lookup_elem(&workload_counters, &key);
}

/* Counters of a workload other than the caller's (an allocation's owner, an
 * exiting process's): never created here, as the path would be the caller's. */
static __always_inline struct gl_counters *counters_of(__u64 cgroup_key, __u32 device) {
  struct gl_workload_key key = {.cgroup_key = cgroup_key, .device = device};
  struct gl_counters *c = bpf_map_lookup_elem(&workload_counters, &key);
  if (c) return c;
  key.cgroup_key = 0;
  key.device = GL_DEVICE_UNKNOWN;
  return bpf_map_lookup_elem(&workload_counters, &key);
}

/* The calling thread's state, created on its first call. */
static __always_inline struct gl_thread_state *thread_state(__u64 tid) {
  struct gl_thread_state *t = bpf_map_lookup_elem(&threads, &tid);
  if (t) return t;
  struct gl_thread_state fresh = {.device = GL_DEVICE_UNKNOWN};
  bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST);
  t = bpf_map_lookup_elem(&threads, &tid);
  if (!t) count_stat(GL_STAT_THREADS_FULL);
  return t;
}

/* A process's live-bytes slot for a device: ordinals past the array share the
 * last slot. The barrier keeps the compiler from indexing with the unchecked
 * value, which the verifier would reject. */
static __always_inline __u64 *live_slot(struct gl_proc_state *p, __u32 device) {
  __u64 slot = device < GL_MAX_DEVICES ? device : GL_MAX_DEVICES; /* 64-bit: no zero-extension after the check */
  barrier_var(slot);
  if (slot > GL_MAX_DEVICES) return NULL;
  return &p->live_bytes[slot];
}

static __always_inline __u64 task_start_ns(void) {
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  return BPF_CORE_READ(task, group_leader, start_time);
}

static __always_inline struct gl_proc_state *process_for(__u32 tgid, __u64 key) {
  struct gl_proc_state *p = bpf_map_lookup_elem(&processes, &tgid);
  if (p) return p;

  struct gl_proc_state fresh = {.start_ns = task_start_ns(), .cgroup_key = key};
  if (bpf_map_update_elem(&processes, &tgid, &fresh, BPF_NOEXIST) == 0) {
    struct gl_proc_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
    if (ev) {
      ev->h.type = GL_EV_PROC_START;
      ev->h.tgid = tgid;
      ev->h.cgroup_key = key;
      ev->start_ns = fresh.start_ns;
      ev->released_bytes = 0;
      bpf_ringbuf_submit(ev, 0);
    } else {
      count_stat(GL_STAT_EVENTS_DROPPED);
    }
  }
  p = bpf_map_lookup_elem(&processes, &tgid);
  if (!p) count_stat(GL_STAT_PROCS_FULL);
  return p;
}

/* The n-th integer argument. Each register is read at a fixed context offset:
 * the verifier rejects a context pointer moved by a variable amount, which is
 * what a switch over the offset compiles to. */
static __always_inline __u64 arg_n(struct pt_regs *ctx, __u32 n) {
  __u64 args[6] = {PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
                   PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), PT_REGS_PARM6(ctx)};
  return n < 6 ? args[n] : 0;
}

/* grid x block of a launch. cuLaunchKernel passes gridDim and blockDimX/Y in
 * registers and blockDimZ on the stack (the 7th integer argument on x86-64,
 * just above the return address at entry). cuLaunchKernelEx passes a
 * CUlaunchConfig whose first six fields are the dimensions. */
/* `sp`: the probe's stack pointer, read once by the program (PT_REGS_SP read
 * twice compiles to a moved context pointer, which the verifier rejects). */
static __always_inline __u64 launch_threads(struct pt_regs *ctx, __u32 kind, __u64 sp) {
  __u32 dim[6] = {};
  if (kind == GL_KIND_LAUNCH_EX) {
    bpf_probe_read_user(dim, sizeof(dim), (void *)PT_REGS_PARM1(ctx));
  } else {
    dim[0] = PT_REGS_PARM2(ctx);
    dim[1] = PT_REGS_PARM3(ctx);
    dim[2] = PT_REGS_PARM4(ctx);
    dim[3] = PT_REGS_PARM5(ctx);
    dim[4] = PT_REGS_PARM6(ctx);
    bpf_probe_read_user(&dim[5], sizeof(dim[5]), (void *)(sp + 8));
  }
  return (__u64)dim[0] * dim[1] * dim[2] * dim[3] * dim[4] * dim[5];
}

/* A legacy launch's threads: its grid (cuLaunch: 1x1) times the block its
 * function was given by cuFuncSetBlockShape (1x1x1 when none was seen). */
static __always_inline __u64 legacy_launch_threads(struct pt_regs *ctx, __u64 cookie) {
  __u64 grid = 1;
  if (GL_COOKIE_SIZE_ARG(cookie) == 1) grid = (__u64)(__u32)PT_REGS_PARM2(ctx) * (__u32)PT_REGS_PARM3(ctx);
  struct gl_func_key fk = {.tgid = bpf_get_current_pid_tgid() >> 32, .func = PT_REGS_PARM1(ctx)};
  struct gl_block_shape *b = bpf_map_lookup_elem(&func_blocks, &fk);
  if (!b) return grid;
  return grid * b->x * b->y * b->z;
}

/* cuLaunchCooperativeKernelMultiDevice: one launch per entry of its list
 * (at most GL_MULTI_LAUNCH_MAX are read), each with its own grid and block. */
static __always_inline __u64 multi_launch_threads(struct pt_regs *ctx, __u64 *launches) {
  __u64 list = PT_REGS_PARM1(ctx), threads = 0;
  __u32 n = (__u32)PT_REGS_PARM2(ctx);
  *launches = 0;
  for (__u32 i = 0; i < GL_MULTI_LAUNCH_MAX; i++) {
    if (i >= n) break;
    struct gl_cu_launch_params p = {};
    if (bpf_probe_read_user(&p, sizeof(p), (void *)(list + i * sizeof(p))) != 0) break;
    threads += (__u64)p.gridDimX * p.gridDimY * p.gridDimZ * p.blockDimX * p.blockDimY * p.blockDimZ;
    *launches += 1;
  }
  return threads;
}

/* Threads and launches of any launch kind (graphs: launches only). */
static __always_inline __u64 any_launch_threads(struct pt_regs *ctx, __u64 cookie, __u64 *launches, __u64 sp) {
  __u32 kind = GL_COOKIE_KIND(cookie);
  *launches = 1;
  if (kind == GL_KIND_GRAPH) return 0;
  if (kind == GL_KIND_LAUNCH_LEGACY) return legacy_launch_threads(ctx, cookie);
  if (kind == GL_KIND_LAUNCH_MULTI) return multi_launch_threads(ctx, launches);
  return launch_threads(ctx, kind, sp);
}

static __always_inline void add_launch(struct gl_counters *c, __u32 kind, __u64 threads, __u64 launches) {
  if (kind == GL_KIND_GRAPH) {
    __sync_fetch_and_add(&c->graph_launches, 1);
    return;
  }
  __sync_fetch_and_add(&c->launches, launches);
  __sync_fetch_and_add(&c->launched_threads, threads);
}

/* The thread's current context (0 when none was seen). */
static __always_inline __u64 current_ctx(const struct gl_thread_state *t) {
  return t && t->depth ? t->ctx_stack[(t->depth - 1) & (GL_CTX_STACK - 1)] : 0;
}

/* The default stream's handles (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) share one slot. */
static __always_inline __u64 span_stream(__u64 stream) { return stream <= 2 ? 0 : stream; }

/* A launch opens its stream's span in the thread's context unless one is
 * open: the GPU is taken to be busy with that work from then until a wait for
 * it returns (gpuledger_abi.h, gl_open_spans). */
static __always_inline void open_span(struct gl_thread_state *t, __u64 cgroup_key, __u32 device, __u64 stream) {
  struct gl_span_key k = {.tgid = bpf_get_current_pid_tgid() >> 32, .ctx = current_ctx(t)};
  struct gl_open_spans *sp = bpf_map_lookup_elem(&open_spans, &k);
  if (!sp) {
    struct gl_open_spans fresh = {.cgroup_key = cgroup_key, .device = device};
    bpf_map_update_elem(&open_spans, &k, &fresh, BPF_NOEXIST);
    sp = bpf_map_lookup_elem(&open_spans, &k);
    if (!sp) {
      count_stat(GL_STAT_SPANS_FULL);
      return;
    }
  }
  stream = span_stream(stream);
  int free = -1;
  for (int i = 0; i < GL_SPAN_STREAMS - 1; i++) {
    if (sp->start_ns[i] && sp->stream[i] == stream) return;
    if (!sp->start_ns[i] && free < 0) free = i;
  }
  __u32 slot = GL_SPAN_STREAMS - 1;
  if (free >= 0) {
    slot = free;
  } else {
    count_stat(GL_STAT_SPAN_STREAMS_FULL);
    stream = GL_SPAN_OVERFLOW_STREAM;
    if (sp->start_ns[slot]) return;
  }
  barrier_var(slot);
  if (slot >= GL_SPAN_STREAMS) return;
  sp->stream[slot] = stream;
  sp->start_ns[slot] = bpf_ktime_get_ns();
}

static __always_inline void count_launches_on(struct gl_thread_state *t, __u32 device, __u32 kind,
                                              __u64 threads, __u64 launches, __u64 stream) {
  if (!launches) return; /* a multi-device launch whose list could not be read */
  __u64 key = current_cgroup_key();
  open_span(t, key, device, stream);
  struct gl_counters *c = counters_for(key, device);
  if (c) add_launch(c, kind, threads, launches);
}

static __always_inline void count_launch_on(struct gl_thread_state *t, __u32 device, __u32 kind,
                                            __u64 threads) {
  count_launches_on(t, device, kind, threads, 1, 0);
}

static __always_inline void count_launches(struct gl_thread_state *t, __u32 kind, __u64 threads, __u64 launches,
                                           __u64 stream) {
  count_launches_on(t, t ? t->device : GL_DEVICE_UNKNOWN, kind, threads, launches, stream);
}

/* The stream a launch goes to: cuLaunchKernel's 9th argument (on the stack,
 * above bz and sharedMem), CUlaunchConfig.hStream, cuGraphLaunch's 2nd;
 * legacy and multi-device launches: the default stream. */
static __always_inline __u64 launch_stream(struct pt_regs *ctx, __u32 kind, __u64 sp) {
  /* Through arg_n: a context read chosen by a condition is a moved context
   * pointer, which the verifier rejects. */
  __u64 p1 = arg_n(ctx, 0), p2 = arg_n(ctx, 1);
  __u64 stream = 0;
  if (kind == GL_KIND_LAUNCH)
    bpf_probe_read_user(&stream, sizeof(stream), (void *)(sp + 24));
  else if (kind == GL_KIND_LAUNCH_EX)
    bpf_probe_read_user(&stream, sizeof(stream), (void *)(p1 + 32));
  else if (kind == GL_KIND_GRAPH)
    stream = p2;
  return stream;
}

/* Ends the spans of `sp` waited for: every slot (`all`), or the one of
 * `stream`; their time adds to the busy_ns of the workload that opened them. */
static __always_inline void end_spans(struct gl_open_spans *sp, bool all, __u64 stream, __u64 now) {
  __u64 busy = 0;
  for (int i = 0; i < GL_SPAN_STREAMS; i++) {
    __u64 start = sp->start_ns[i];
    if (!start || (!all && sp->stream[i] != stream)) continue;
    sp->start_ns[i] = 0;
    if (now > start) busy += now - start;
  }
  if (!busy) return;
  struct gl_counters *c = counters_of(sp->cgroup_key, sp->device);
  if (c) __sync_fetch_and_add(&c->busy_ns, busy);
}

static __always_inline void end_context_spans(__u32 tgid, __u64 ctx, bool all, __u64 stream, __u64 now) {
  struct gl_span_key k = {.tgid = tgid, .ctx = ctx};
  struct gl_open_spans *sp = bpf_map_lookup_elem(&open_spans, &k);
  if (sp) end_spans(sp, all, span_stream(stream), now);
}

/* What a call counts as, whichever level sees it: launches, copies and
 * allocations have driver and runtime shapes of their own. */
static __always_inline __u32 call_class(__u32 kind) {
  switch (kind) {
    case GL_KIND_LAUNCH_EX:
    case GL_KIND_RT_LAUNCH:
    case GL_KIND_LAUNCH_LEGACY:
    case GL_KIND_LAUNCH_MULTI:
      return GL_KIND_LAUNCH;
    case GL_KIND_RT_MEMCPY:
    case GL_KIND_MEMCPY_2D:
    case GL_KIND_MEMCPY_3D:
    case GL_KIND_MEMCPY_3D_PEER:
    case GL_KIND_MEMCPY_BATCH:
    case GL_KIND_MEMCPY_3D_BATCH:
      return GL_KIND_MEMCPY;
    case GL_KIND_ALLOC_PITCH:
    case GL_KIND_ARRAY_CREATE:
      return GL_KIND_ALLOC;
    default:
      return kind;
  }
}

/* The driver side of the per-thread de-duplication (runtime_handlers.h has
 * the other): a driver call of the class of the runtime call in flight on
 * this thread is that call seen again. Marks it seen, and says whether the
 * runtime level counts it (--runtime-probes on) rather than this one.
 * Nested means within the runtime call's frame: a driver entry at or below
 * its entry stack pointer (at: the runtime function tail-called the driver),
 * a driver return at most 8 bytes above it (its return address popped). A
 * probe above that means the runtime call's return was never seen: the
 * marker is stale. `sp` is the probe's stack pointer; `at_return` says which. */
static __always_inline bool runtime_owns(struct gl_thread_state *t, __u32 kind, __u64 sp, bool at_return) {
  if (!t || !t->runtime.call.cookie) return false;
  if (sp > t->runtime.entry_sp + (at_return ? 8 : 0)) {
    t->runtime.call.cookie = 0;
    return false;
  }
  if (call_class(GL_COOKIE_KIND(t->runtime.call.cookie)) != call_class(kind)) return false;
  t->runtime.driver_seen = 1;
  return runtime_mode == GL_RUNTIME_ON;
}

/* Launches, entry only: the cheapest form, for the hottest calls. Counts
 * launches attempted; --launch-returns moves them to gl_call_entry/return. */
SEC("uprobe")
int gl_launch(struct pt_regs *ctx) {
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u32 kind = GL_COOKIE_KIND(cookie);
  __u64 launches;
  __u64 sp = PT_REGS_SP(ctx);
  barrier_var(sp);
  __u64 threads = any_launch_threads(ctx, cookie, &launches, sp);
  struct gl_thread_state *t = thread_state(bpf_get_current_pid_tgid());
  if (runtime_owns(t, kind, sp, false)) return 0;
  count_launches(t, kind, threads, launches, launch_stream(ctx, kind, sp));
  return 0;
}

/* The direction of a copy between two CUmemorytypes: arrays are device
 * memory; unified (or host to host) is left to the driver: unknown. */
static __always_inline __u64 direction_of(__u32 src, __u32 dst) {
  bool src_dev = src == GL_CU_MEMORYTYPE_DEVICE || src == GL_CU_MEMORYTYPE_ARRAY;
  bool dst_dev = dst == GL_CU_MEMORYTYPE_DEVICE || dst == GL_CU_MEMORYTYPE_ARRAY;
  if (src == GL_CU_MEMORYTYPE_HOST && dst_dev) return GL_DIR_HTOD;
  if (src_dev && dst == GL_CU_MEMORYTYPE_HOST) return GL_DIR_DTOH;
  if (src_dev && dst_dev) return GL_DIR_DTOD;
  return GL_DIR_UNKNOWN;
}

/* A 2D or 3D copy's bytes and direction, from its descriptor (legacy forms:
 * the _v1 struct). A descriptor that cannot be read counts 0 bytes. */
static __always_inline __u64 struct_copy_bytes(__u32 kind, bool legacy, __u64 desc, __u64 *dir) {
  *dir = GL_DIR_UNKNOWN;
  if (kind == GL_KIND_MEMCPY_2D) {
    if (legacy) {
      struct gl_cu_memcpy2d_v1 d = {};
      if (bpf_probe_read_user(&d, sizeof(d), (void *)desc)) return 0;
      *dir = direction_of(d.srcMemoryType, d.dstMemoryType);
      return (__u64)d.WidthInBytes * d.Height;
    }
    struct gl_cu_memcpy2d d = {};
    if (bpf_probe_read_user(&d, sizeof(d), (void *)desc)) return 0;
    *dir = direction_of(d.srcMemoryType, d.dstMemoryType);
    return d.WidthInBytes * d.Height;
  }
  if (legacy) {
    struct gl_cu_memcpy3d_v1 d = {};
    if (bpf_probe_read_user(&d, sizeof(d), (void *)desc)) return 0;
    *dir = direction_of(d.srcMemoryType, d.dstMemoryType);
    return (__u64)d.WidthInBytes * d.Height * d.Depth;
  }
  struct gl_cu_memcpy3d d = {};
  if (bpf_probe_read_user(&d, sizeof(d), (void *)desc)) return 0;
  *dir = kind == GL_KIND_MEMCPY_3D_PEER ? GL_DIR_PEER : direction_of(d.srcMemoryType, d.dstMemoryType);
  return d.WidthInBytes * d.Height * d.Depth;
}

/* Bytes per element of an array format (per channel); 0: not known here. */
static __always_inline __u64 format_bytes(__u32 format) {
  switch (format) {
    case GL_CU_AD_FORMAT_UNSIGNED_INT8:
    case GL_CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case GL_CU_AD_FORMAT_UNSIGNED_INT16:
    case GL_CU_AD_FORMAT_SIGNED_INT16:
    case GL_CU_AD_FORMAT_HALF:
      return 2;
    case GL_CU_AD_FORMAT_UNSIGNED_INT32:
    case GL_CU_AD_FORMAT_SIGNED_INT32:
    case GL_CU_AD_FORMAT_FLOAT:
      return 4;
  }
  return 0;
}

static __always_inline __u64 at_least_1(__u64 v) { return v ? v : 1; }

/* The bytes an array holds, from its descriptor: width x height x depth
 * (0 meaning 1) x channels x element size, summed over a mipmap's levels
 * (each half the one before, at least 1). The driver pads and aligns: this is
 * the data the array holds, not the driver's reservation. */
static __always_inline __u64 array_bytes(__u64 cookie, struct pt_regs *ctx) {
  bool legacy = GL_COOKIE_LEGACY(cookie);
  __u32 shape = GL_COOKIE_SIZE_ARG(cookie);
  __u64 desc = PT_REGS_PARM2(ctx), w = 0, h = 0, d = 1, elem = 0;
  if (shape == GL_ARRAY_2D) {
    if (legacy) {
      struct gl_cu_array_descriptor_v1 a = {};
      if (bpf_probe_read_user(&a, sizeof(a), (void *)desc)) return 0;
      w = a.Width, h = a.Height, elem = format_bytes(a.Format) * a.NumChannels;
    } else {
      struct gl_cu_array_descriptor a = {};
      if (bpf_probe_read_user(&a, sizeof(a), (void *)desc)) return 0;
      w = a.Width, h = a.Height, elem = format_bytes(a.Format) * a.NumChannels;
    }
  } else if (legacy) {
    struct gl_cu_array3d_descriptor_v1 a = {};
    if (bpf_probe_read_user(&a, sizeof(a), (void *)desc)) return 0;
    w = a.Width, h = a.Height, d = a.Depth, elem = format_bytes(a.Format) * a.NumChannels;
  } else {
    struct gl_cu_array3d_descriptor a = {};
    if (bpf_probe_read_user(&a, sizeof(a), (void *)desc)) return 0;
    w = a.Width, h = a.Height, d = a.Depth, elem = format_bytes(a.Format) * a.NumChannels;
  }
  if (!elem) {
    count_stat(GL_STAT_ARRAY_SIZE_UNKNOWN);
    return 0;
  }
  h = at_least_1(h), d = at_least_1(d);
  if (shape != GL_ARRAY_MIPMAP) return w * h * d * elem;
  __u32 levels = (__u32)PT_REGS_PARM3(ctx);
  __u64 total = 0;
  for (__u32 l = 0; l < GL_MIPMAP_LEVELS_MAX; l++) {
    if (l >= levels) break;
    total += w * h * d * elem;
    w = at_least_1(w >> 1), h = at_least_1(h >> 1), d = at_least_1(d >> 1);
  }
  return total;
}

/* A memset's bytes: elements (or width x height) x element size. */
static __always_inline __u64 memset_bytes(struct pt_regs *ctx, __u64 cookie, __u64 mask) {
  __u32 arg = GL_COOKIE_SIZE_ARG(cookie), how = GL_COOKIE_DIR(cookie);
  __u64 n = arg_n(ctx, arg) & mask;
  if (how & GL_MEMSET_2D) n *= arg_n(ctx, arg + 1) & mask;
  return n * (how & 0x7);
}

/* cuMemcpyBatchAsync(dsts, srcs, sizes, count, ...): the sum of sizes[],
 * read in a bounded loop (bpf_loop), at most GL_BATCH_COPIES_MAX entries. */
struct batch_sum {
  __u64 sizes;
  __u64 bytes;
};
static long add_batch_size(__u64 i, void *data) {
  struct batch_sum *b = data;
  __u64 size = 0;
  if (bpf_probe_read_user(&size, sizeof(size), (void *)(b->sizes + i * sizeof(size)))) return 1;
  b->bytes += size;
  return 0;
}
static long add_batch_extent(__u64 i, void *data) {
  struct batch_sum *b = data;
  struct gl_cu_extent3d e = {};
  if (bpf_probe_read_user(&e, sizeof(e), (void *)(b->sizes + i * GL_CU_MEMCPY3D_BATCH_OP_SIZE +
                                                  GL_CU_MEMCPY3D_BATCH_OP_EXTENT)))
    return 1;
  b->bytes += e.width * e.height * e.depth;
  return 0;
}
static __always_inline __u64 batch_bytes(struct pt_regs *ctx, bool ops3d) {
  /* Through arg_n: a context read chosen by a condition is a moved context
   * pointer, which the verifier rejects. */
  struct batch_sum b = {.sizes = arg_n(ctx, ops3d ? 1 : 2)};
  __u64 n = arg_n(ctx, ops3d ? 0 : 3);
  if (n > GL_BATCH_COPIES_MAX) n = GL_BATCH_COPIES_MAX;
  bpf_loop(n, ops3d ? add_batch_extent : add_batch_size, &b, 0);
  return b.bytes;
}

static __always_inline void add_memcpy(struct gl_counters *c, __u64 dir, __u64 bytes) {
  if (dir >= GL_DIR_COUNT) return;
  __sync_fetch_and_add(&c->memcpy_bytes[dir], bytes);
  __sync_fetch_and_add(&c->memcpy_calls[dir], 1);
}

/* An asynchronous copy or a memset (GL_COOKIE_AT_ENTRY): counted at its entry
 * from the arguments just read, as a launch is - the uretprobe it no longer
 * has cost more than the entry probe. The runtime's own probe counts it
 * instead where it owns the call (runtime_owns). */
static __always_inline void count_at_entry(struct gl_thread_state *t, __u32 kind, const struct gl_call_stash *s,
                                           __u64 sp) {
  if (runtime_owns(t, kind, sp, false)) return;
  struct gl_counters *c = counters_for(current_cgroup_key(), t ? t->device : GL_DEVICE_UNKNOWN);
  if (!c) return;
  if (call_class(kind) == GL_KIND_MEMCPY) {
    add_memcpy(c, s->a1, s->a0);
  } else {
    __sync_fetch_and_add(&c->memsets, 1);
    __sync_fetch_and_add(&c->memset_bytes, s->a0);
  }
}

SEC("uprobe")
int gl_call_entry(struct pt_regs *ctx) {
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u32 kind = GL_COOKIE_KIND(cookie);
  __u64 mask = GL_COOKIE_LEGACY(cookie) ? 0xffffffffULL : ~0ULL;
  struct gl_call_stash s = {.cookie = cookie};
  __u64 sp = PT_REGS_SP(ctx);
  barrier_var(sp);

  switch (kind) {
    case GL_KIND_LAUNCH:
    case GL_KIND_LAUNCH_EX:
    case GL_KIND_LAUNCH_LEGACY:
    case GL_KIND_LAUNCH_MULTI:
    case GL_KIND_GRAPH:
      s.a0 = any_launch_threads(ctx, cookie, &s.a1, sp);
      s.a2 = launch_stream(ctx, kind, sp);
      break;
    case GL_KIND_EVENT_RECORD:
      s.a0 = PT_REGS_PARM1(ctx); /* CUevent */
      s.a1 = PT_REGS_PARM2(ctx); /* CUstream */
      break;
    case GL_KIND_QUERY:
      s.a0 = PT_REGS_PARM1(ctx); /* the stream or event */
      break;
    case GL_KIND_MEMCPY:
      s.a0 = arg_n(ctx, GL_COOKIE_SIZE_ARG(cookie)) & mask;
      s.a1 = GL_COOKIE_DIR(cookie);
      break;
    case GL_KIND_MEMCPY_BATCH:
    case GL_KIND_MEMCPY_3D_BATCH:
      s.a0 = batch_bytes(ctx, kind == GL_KIND_MEMCPY_3D_BATCH);
      s.a1 = GL_DIR_UNKNOWN;
      break;
    case GL_KIND_MEMCPY_2D:
    case GL_KIND_MEMCPY_3D:
    case GL_KIND_MEMCPY_3D_PEER:
      s.a0 = struct_copy_bytes(kind, GL_COOKIE_LEGACY(cookie), PT_REGS_PARM1(ctx), &s.a1);
      break;
    case GL_KIND_ARRAY_CREATE:
      s.a0 = PT_REGS_PARM1(ctx); /* CUarray *out */
      s.a1 = array_bytes(cookie, ctx);
      break;
    case GL_KIND_MEMSET:
      s.a0 = memset_bytes(ctx, cookie, mask);
      break;
    case GL_KIND_BLOCK_SHAPE:
      s.a0 = PT_REGS_PARM1(ctx);
      s.a1 = (__u32)PT_REGS_PARM2(ctx) | ((__u64)(__u32)PT_REGS_PARM3(ctx) << 32);
      s.a2 = (__u32)PT_REGS_PARM4(ctx);
      break;
    case GL_KIND_EXPORT_TABLE:
      /* The table's id: 16 bytes at the second argument. */
      bpf_probe_read_user(&s.a0, 2 * sizeof(__u64), (void *)PT_REGS_PARM2(ctx));
      break;
    case GL_KIND_ALLOC:
      s.a0 = PT_REGS_PARM1(ctx);
      s.a1 = PT_REGS_PARM2(ctx) & mask;
      break;
    case GL_KIND_ALLOC_PITCH:
      s.a0 = PT_REGS_PARM1(ctx);
      s.a1 = PT_REGS_PARM2(ctx); /* size_t *pPitch, written by the call */
      s.a2 = PT_REGS_PARM4(ctx) & mask;
      break;
    case GL_KIND_FREE:
      s.a0 = PT_REGS_PARM1(ctx) & mask;
      break;
    case GL_KIND_SYNC:
      s.start_ns = bpf_ktime_get_ns();
      s.a0 = PT_REGS_PARM1(ctx); /* the stream or event (none for a context) */
      break;
    case GL_KIND_CONTEXT:
      s.a0 = PT_REGS_PARM1(ctx);
      s.a1 = arg_n(ctx, GL_COOKIE_SIZE_ARG(cookie)) & 0xffffffffULL; /* CUdevice is an int */
      break;
  }
  struct gl_thread_state *t = thread_state(bpf_get_current_pid_tgid());
  if (GL_COOKIE_AT_ENTRY(cookie)) {
    count_at_entry(t, kind, &s, sp);
    return 0;
  }
  if (t) t->call = s;
  return 0;
}

static __always_inline void record_alloc(struct gl_counters *c, struct gl_proc_state *p, __u32 tgid,
                                         __u64 key, __u32 device, __u64 ptr, __u64 bytes) {
  __sync_fetch_and_add(&c->allocations, 1);
  __sync_fetch_and_add(&c->allocated_bytes, bytes);
  if (!p) return;
  struct gl_alloc_key ak = {.tgid = tgid, .ptr = ptr};
  struct gl_alloc_value av = {.bytes = bytes, .cgroup_key = key, .proc_start_ns = p->start_ns, .device = device};
  __u64 *live = live_slot(p, device);
  if (live && bpf_map_update_elem(&live_allocations, &ak, &av, BPF_ANY) == 0)
    __sync_fetch_and_add(live, bytes);
  else
    count_stat(GL_STAT_ALLOCS_UNTRACKED);
}

/* At an allocation's return: the pointer it wrote (*out, 32 bits wide in a
 * legacy form) and its bytes (pitched: the pitch it wrote x height). */
static __always_inline __u64 read_allocation(__u32 kind, __u32 legacy, const struct gl_call_stash *s, __u64 *ptr) {
  *ptr = 0;
  if (legacy) {
    __u32 p32 = 0;
    bpf_probe_read_user(&p32, sizeof(p32), (void *)s->a0);
    *ptr = p32;
  } else {
    bpf_probe_read_user(ptr, sizeof(*ptr), (void *)s->a0);
  }
  if (kind != GL_KIND_ALLOC_PITCH) return s->a1;
  __u64 pitch = 0;
  bpf_probe_read_user(&pitch, sizeof(pitch), (void *)s->a1);
  return pitch * s->a2;
}

static __always_inline void record_free(struct gl_counters *c, struct gl_proc_state *p, __u32 tgid,
                                        __u64 ptr) {
  struct gl_alloc_key ak = {.tgid = tgid, .ptr = ptr};
  struct gl_alloc_value *av = bpf_map_lookup_elem(&live_allocations, &ak);
  if (!av || !p || av->proc_start_ns != p->start_ns) {
    /* Allocated before we attached (or by a previous owner of this PID):
     * its size is unknown, so it cannot be counted as freed bytes. */
    __sync_fetch_and_add(&c->untracked_frees, 1);
    return;
  }
  struct gl_alloc_value owner = *av;
  bpf_map_delete_elem(&live_allocations, &ak);
  __u64 *live = live_slot(p, owner.device);
  if (live) __sync_fetch_and_add(live, -owner.bytes);
  /* Freed bytes go back to the workload and device that allocated them. */
  struct gl_counters *oc = counters_of(owner.cgroup_key, owner.device);
  if (oc) __sync_fetch_and_add(&oc->freed_bytes, owner.bytes);
}

/* A wait that returned (a sync, a query that reported completion): the work
 * it waited for is complete, whichever thread launched it, which ends those
 * spans (`s`: its stash, the cookie says what it waited for). */
static __always_inline void end_waited_spans(struct gl_thread_state *t, __u32 tgid, const struct gl_call_stash *s,
                                             __u64 now) {
  __u32 target = GL_COOKIE_DIR(s->cookie);
  __u64 ctx = current_ctx(t);
  if (target == GL_SYNC_CONTEXT) {
    end_context_spans(tgid, ctx, true, 0, now);
  } else if (target == GL_SYNC_EVENT) {
    struct gl_event_key ek = {.tgid = tgid, .event = s->a0};
    struct gl_event_stream *es = bpf_map_lookup_elem(&event_streams, &ek);
    if (es) end_context_spans(tgid, es->ctx, false, es->stream, now);
  } else {
    end_context_spans(tgid, ctx, false, s->a0, now);
  }
}

static __always_inline void add_sync(struct gl_thread_state *t, struct gl_counters *c, __u32 tgid,
                                     const struct gl_call_stash *s) {
  __u64 now = bpf_ktime_get_ns();
  __sync_fetch_and_add(&c->syncs, 1);
  __sync_fetch_and_add(&c->sync_ns, now - s->start_ns);
  end_waited_spans(t, tgid, s, now);
}

/* A failed call of a process whose cuInit failed is that failure again (the
 * runtime reports the sticky initialisation error from every call after):
 * counted once, as the cuInit error, and the rest in the stats. */
static __always_inline bool repeats_failed_init(__u32 tgid) {
  struct gl_proc_state *p = bpf_map_lookup_elem(&processes, &tgid);
  if (!p || !p->init_failed) return false;
  count_stat(GL_STAT_FAILED_AFTER_INIT_FAILED);
  return true;
}

static __always_inline void count_error(__u64 key, __u32 call_id, __u32 device) {
  struct gl_error_key ek = {.cgroup_key = key, .call_id = call_id, .device = device};
  __u64 *n = bpf_map_lookup_elem(&call_errors, &ek);
  if (n) {
    __sync_fetch_and_add(n, 1);
    return;
  }
  __u64 one = 1;
  if (bpf_map_update_elem(&call_errors, &ek, &one, BPF_NOEXIST) != 0) {
    n = bpf_map_lookup_elem(&call_errors, &ek);
    if (n) __sync_fetch_and_add(n, 1);
  }
}

/* The context stack of a thread, as the driver keeps it: the top is the
 * current context, and its device is where the thread's calls go. */
static __always_inline void apply_context_op(struct gl_thread_state *t, __u32 tgid, __u32 op, __u64 arg,
                                             __u32 device) {
  struct gl_ctx_key ck = {.tgid = tgid};
  __u64 ctx = 0;
  __u32 top = t->depth ? (t->depth - 1) & (GL_CTX_STACK - 1) : 0;

  switch (op) {
    case GL_CTX_CREATE:
    case GL_CTX_RETAIN:
      bpf_probe_read_user(&ctx, sizeof(ctx), (void *)arg); /* the CUcontext written to *out */
      ck.ctx = ctx;
      bpf_map_update_elem(&context_devices, &ck, &device, BPF_ANY);
      if (op == GL_CTX_RETAIN) return;
      /* created contexts are pushed: fall through */
    case GL_CTX_PUSH:
      if (op == GL_CTX_PUSH) ctx = arg;
      if (t->depth < GL_CTX_STACK) t->depth++;
      t->ctx_stack[(t->depth - 1) & (GL_CTX_STACK - 1)] = ctx;
      break;
    case GL_CTX_SET:
      if (!t->depth) t->depth = 1;
      t->ctx_stack[top] = arg;
      break;
    case GL_CTX_POP:
      if (t->depth) t->depth--;
      break;
    case GL_CTX_DESTROY: {
      /* Its work is gone with it: its spans end now. */
      struct gl_span_key sk = {.tgid = tgid, .ctx = arg};
      struct gl_open_spans *sp = bpf_map_lookup_elem(&open_spans, &sk);
      if (sp) {
        end_spans(sp, true, 0, bpf_ktime_get_ns());
        bpf_map_delete_elem(&open_spans, &sk);
      }
      ck.ctx = arg;
      bpf_map_delete_elem(&context_devices, &ck);
      if (t->depth && t->ctx_stack[top] == arg) t->depth--;
      break;
    }
  }
  t->device = GL_DEVICE_UNKNOWN;
  if (t->depth) {
    ck.ctx = t->ctx_stack[(t->depth - 1) & (GL_CTX_STACK - 1)];
    __u32 *d = ck.ctx ? bpf_map_lookup_elem(&context_devices, &ck) : NULL;
    if (d) t->device = *d;
  }
}

/* What a successful call adds, whichever level saw it (`dir`: a copy's
 * direction; `legacy`: 32-bit pointers and sizes). */
static __always_inline void count_success(struct gl_thread_state *t, struct gl_counters *c, struct gl_proc_state *p,
                                          __u32 tgid, __u64 key, __u32 device, __u32 kind, __u32 legacy, __u64 dir,
                                          const struct gl_call_stash *s) {
  __u64 ptr = 0, bytes;
  switch (call_class(kind)) {
    case GL_KIND_MEMCPY:
      add_memcpy(c, dir, s->a0);
      /* A synchronous copy returns after the default stream's earlier work. */
      if (GL_COOKIE_SYNC_COPY(s->cookie)) end_context_spans(tgid, current_ctx(t), false, 0, bpf_ktime_get_ns());
      break;
    case GL_KIND_ALLOC:
      /* An array's handle is a pointer whatever the form. */
      bytes = read_allocation(kind, kind == GL_KIND_ARRAY_CREATE ? 0 : legacy, s, &ptr);
      record_alloc(c, p, tgid, key, device, ptr, bytes);
      break;
    case GL_KIND_FREE:
      record_free(c, p, tgid, s->a0);
      break;
    case GL_KIND_SYNC:
      add_sync(t, c, tgid, s);
      break;
    case GL_KIND_QUERY:
      /* Completion reported: the work launched before it is done. */
      end_waited_spans(t, tgid, s, bpf_ktime_get_ns());
      break;
    case GL_KIND_MEMSET:
      __sync_fetch_and_add(&c->memsets, 1);
      __sync_fetch_and_add(&c->memset_bytes, s->a0);
      break;
  }
}

/* cuGetExportTable: one more request for this table id by this workload. */
static __always_inline void count_export_table(__u64 key, const struct gl_call_stash *s) {
  struct gl_export_table_key ek = {.cgroup_key = key};
  __builtin_memcpy(ek.table, &s->a0, sizeof(ek.table));
  __u64 *n = bpf_map_lookup_elem(&export_tables, &ek);
  if (n) {
    __sync_fetch_and_add(n, 1);
    return;
  }
  __u64 one = 1;
  if (bpf_map_update_elem(&export_tables, &ek, &one, BPF_NOEXIST) == 0) return;
  n = bpf_map_lookup_elem(&export_tables, &ek);
  if (n)
    __sync_fetch_and_add(n, 1);
  else
    count_stat(GL_STAT_EXPORT_TABLES_FULL);
}

SEC("uretprobe")
int gl_call_return(struct pt_regs *ctx) {
  __u64 tid = bpf_get_current_pid_tgid();
  __u64 cookie = bpf_get_attach_cookie(ctx);
  struct gl_thread_state *t = bpf_map_lookup_elem(&threads, &tid);
  if (!t || t->call.cookie != cookie) {
    count_stat(GL_STAT_STASH_MISSING);
    return 0;
  }
  struct gl_call_stash s = t->call;
  t->call.cookie = 0;

  __u32 kind = GL_COOKIE_KIND(cookie);
  if (runtime_owns(t, kind, PT_REGS_SP(ctx), true)) return 0;
  __u32 tgid = tid >> 32;
  __u32 device = t->device;
  __u64 key = current_cgroup_key();
  int rc = (int)PT_REGS_RC(ctx);
  if (kind == GL_KIND_EXPORT_TABLE) count_export_table(key, &s); /* asked for, found or not */
  if (kind == GL_KIND_QUERY && rc == 600 /* CUDA_ERROR_NOT_READY: still running, not a failure */) return 0;
  if (kind == GL_KIND_OTHER) { /* cuInit: remember how it went */
    struct gl_proc_state *ip = process_for(tid >> 32, key);
    if (ip) ip->init_failed = rc != 0;
  } else if (rc != 0 && repeats_failed_init(tid >> 32)) {
    return 0;
  }
  if (rc != 0) {
    count_error(key, GL_COOKIE_CALL(cookie), device);
    return 0;
  }
  if (call_class(kind) == GL_KIND_LAUNCH || kind == GL_KIND_GRAPH) {
    count_launches(t, kind, s.a0, s.a1, s.a2);
    return 0;
  }
  if (kind == GL_KIND_EVENT_RECORD) {
    struct gl_event_key ek = {.tgid = tgid, .event = s.a0};
    struct gl_event_stream es = {.ctx = current_ctx(t), .stream = s.a1};
    bpf_map_update_elem(&event_streams, &ek, &es, BPF_ANY);
    return 0;
  }
  if (kind == GL_KIND_BLOCK_SHAPE) {
    struct gl_func_key fk = {.tgid = tgid, .func = s.a0};
    struct gl_block_shape b = {.x = (__u32)s.a1, .y = (__u32)(s.a1 >> 32), .z = (__u32)s.a2};
    bpf_map_update_elem(&func_blocks, &fk, &b, BPF_ANY);
    return 0;
  }
  /* Allocations and frees need the process's state; other calls only make
   * sure the process is known, which each thread checks once. */
  struct gl_proc_state *p = NULL;
  __u32 cls = call_class(kind);
  if (cls == GL_KIND_ALLOC || cls == GL_KIND_FREE || !t->process_known) {
    p = process_for(tgid, key);
    if (p) t->process_known = 1;
  }
  if (kind == GL_KIND_CONTEXT || kind == GL_KIND_OTHER || kind == GL_KIND_EXPORT_TABLE) {
    /* Bookkeeping only: no counter of the workload changes. */
    if (kind == GL_KIND_CONTEXT) apply_context_op(t, tgid, GL_COOKIE_CTX_OP(cookie), s.a0, s.a1);
    return 0;
  }
  struct gl_counters *c = counters_for(key, device);
  if (c) count_success(t, c, p, tgid, key, device, kind, GL_COOKIE_LEGACY(cookie), s.a1, &s);
  return 0;
}

#include "runtime_handlers.h"

/* A process's exit ends its spans (its work is torn down with it) and
 * removes their entries. */
static long end_process_spans(struct bpf_map *map, struct gl_span_key *k, struct gl_open_spans *sp, __u32 *tgid) {
  if (k->tgid != *tgid) return 0;
  end_spans(sp, true, 0, bpf_ktime_get_ns());
  bpf_map_delete_elem(map, k);
  return 0;
}

/* A process that ends its life frees everything it still held: the driver
 * tears its contexts down. Every thread exit passes here; only the last thread
 * of a process we know (live == 0) does work. */
SEC("tp_btf/sched_process_exit") /* BTF raw tracepoint: needs no tracefs mount */
int BPF_PROG(gl_process_exit, struct task_struct *task) {
  __u64 tid = bpf_get_current_pid_tgid();
  __u32 tgid = tid >> 32;
  bpf_map_delete_elem(&threads, &tid);
  struct gl_proc_state *p = bpf_map_lookup_elem(&processes, &tgid);
  if (!p) return 0;
  if (BPF_CORE_READ(task, signal, live.counter) != 0) return 0;

  __u64 released = 0;
  for (__u32 slot = 0; slot <= GL_MAX_DEVICES; slot++) {
    __u64 held = p->live_bytes[slot];
    if (!held) continue;
    released += held;
    struct gl_counters *c = counters_of(p->cgroup_key, slot < GL_MAX_DEVICES ? slot : GL_DEVICE_UNKNOWN);
    if (c) __sync_fetch_and_add(&c->freed_bytes, held);
  }
  bpf_for_each_map_elem(&open_spans, end_process_spans, &tgid, 0);
  struct gl_proc_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
  if (ev) {
    ev->h.type = GL_EV_PROC_EXIT;
    ev->h.tgid = tgid;
    ev->h.cgroup_key = p->cgroup_key;
    ev->start_ns = p->start_ns;
    ev->released_bytes = released;
    bpf_ringbuf_submit(ev, 0);
  } else {
    count_stat(GL_STAT_EVENTS_DROPPED);
  }
  bpf_map_delete_elem(&processes, &tgid);
  return 0;
}
