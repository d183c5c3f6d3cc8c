// SPDX-License-Identifier: GPL-2.0
/* CUDA driver API attribution: uprobes on libcuda entry points, counted per
 * workload (cgroup) in preallocated maps. Userspace reads the maps; only rare events
 * (a new workload, a process starting or ending its CUDA life) go through the
 * ring buffer, so the hot path never talks to userspace.
 *
 * One program per handler shape; the attach cookie tells it which entry point
 * it sits on (see cuda_probes.h, the contract with the agent's side in
 * src/probes/cuda_probe_program.cpp). The handlers are in the .bpf.h files included
 * below, in the order a call meets them; shared helpers in lib/. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cuda_struct_layouts.h"
#include "cuda_probes.h"

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

/* Read and written by the agent only (cuda_probes.h); pinned with the rest. */
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

/* Open busy spans per process and context (cuda_probes.h). Preallocated:
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

#include "lib/cgroup_key.bpf.h"
#include "cuda_workloads.bpf.h"
#include "lib/thread_state.bpf.h"
#include "cuda_launch_args.bpf.h"
#include "lib/spans.bpf.h"
#include "cuda_call_class.bpf.h"
#include "cuda_launches.bpf.h"
#include "cuda_copy_args.bpf.h"
#include "cuda_driver_calls.bpf.h"
#include "cuda_runtime.bpf.h"

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
