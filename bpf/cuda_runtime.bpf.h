/* CUDA runtime API attribution (--runtime-probes): uprobes on libcudart's
 * entry points, in a shared libcudart or an executable that links it
 * statically. Included by cuda_probes.bpf.c after the driver handlers: these
 * count into that program's maps, with its helpers, so a call counts the same
 * whichever level sees it.
 *
 * De-duplication is per thread. The runtime entry records the call in the
 * thread's state; a driver probe of the same class firing beneath it on that
 * thread marks it seen (runtime_owns, in cuda_call_class.bpf.h). At the runtime
 * return:
 *   on:   the runtime level counts every call (the driver skipped the nested one);
 *   auto: it counts only a call the driver level did not see - the process's
 *         runtime reached the driver around its exported symbols - and reports
 *         that process once (GL_EV_RUNTIME_BYPASS).
 * Calls that need no driver (cudaFree(NULL), cudaMalloc of 0 bytes, copies of
 * 0 bytes or host to host) are counted by neither level.
 * See docs/runtime-probes.md. */
#ifndef GPULEDGER_CUDA_RUNTIME_BPF_H
#define GPULEDGER_CUDA_RUNTIME_BPF_H

/* Processes reported as reaching the driver around its exported symbols,
 * keyed by (tgid, start time) so a reused PID is reported anew. LRU: an
 * evicted process is at worst reported twice. */
struct gl_bypass_key {
  __u32 tgid;
  __u32 pad;
  __u64 start_ns;
};
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, struct gl_bypass_key);
  __type(value, __u8);
} runtime_bypass SEC(".maps");

/* grid x block of cudaLaunchKernel: each dim3 (12 bytes) is passed by value
 * in two registers, x | y << 32 and then z. */
static __always_inline __u64 runtime_launch_threads(struct pt_regs *ctx) {
  __u64 g = PT_REGS_PARM2(ctx), gz = PT_REGS_PARM3(ctx) & 0xffffffff;
  __u64 b = PT_REGS_PARM4(ctx), bz = PT_REGS_PARM5(ctx) & 0xffffffff;
  return (g & 0xffffffff) * (g >> 32) * gz * (b & 0xffffffff) * (b >> 32) * bz;
}

/* enum cudaMemcpyKind -> direction; host to host (0) and unknown kinds are
 * not device copies. */
static __always_inline __u64 runtime_copy_direction(__u64 kind) {
  switch (kind) {
    case 1: return GL_DIR_HTOD;
    case 2: return GL_DIR_DTOH;
    case 3: return GL_DIR_DTOD;
    case 4: return GL_DIR_UNKNOWN; /* cudaMemcpyDefault: unified addressing decides */
    default: return GL_DIR_COUNT;
  }
}

SEC("uprobe")
int gl_rt_entry(struct pt_regs *ctx) {
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u64 sp = PT_REGS_SP(ctx);
  struct gl_thread_state *t = thread_state(bpf_get_current_pid_tgid());
  if (!t) return 0;
  /* A runtime entry point called by another one in flight (in its frame, or
   * tail-called from it at the same stack pointer): the outer call is the
   * application's, and it alone counts. */
  if (t->runtime.call.cookie && sp <= t->runtime.entry_sp) return 0;

  struct gl_runtime_call r = {.call = {.cookie = cookie}, .entry_sp = sp};
  switch (GL_COOKIE_KIND(cookie)) {
    case GL_KIND_RT_LAUNCH:
      r.call.a0 = runtime_launch_threads(ctx);
      break;
    case GL_KIND_LAUNCH_EX:
      r.call.a0 = launch_threads(ctx, GL_KIND_LAUNCH_EX, sp);
      break;
    case GL_KIND_ALLOC:
      r.call.a0 = PT_REGS_PARM1(ctx);
      r.call.a1 = PT_REGS_PARM2(ctx);
      break;
    case GL_KIND_ALLOC_PITCH:
      r.call.a0 = PT_REGS_PARM1(ctx);
      r.call.a1 = PT_REGS_PARM2(ctx);
      r.call.a2 = PT_REGS_PARM4(ctx);
      break;
    case GL_KIND_RT_MEMCPY:
      r.call.a0 = PT_REGS_PARM3(ctx);
      r.call.a1 = runtime_copy_direction(PT_REGS_PARM4(ctx) & 0xffffffff);
      break;
    case GL_KIND_MEMCPY:
      r.call.a0 = arg_n(ctx, GL_COOKIE_SIZE_ARG(cookie));
      r.call.a1 = GL_COOKIE_DIR(cookie);
      break;
    case GL_KIND_FREE:
    case GL_KIND_RT_SET_DEVICE:
      r.call.a0 = PT_REGS_PARM1(ctx);
      break;
    case GL_KIND_SYNC:
      r.call.start_ns = bpf_ktime_get_ns();
      r.call.a0 = PT_REGS_PARM1(ctx); /* the stream or event (none for the device) */
      break;
  }
  t->runtime = r;
  return 0;
}

/* Whether the call, as made, needs the driver at all (see the top). */
static __always_inline bool runtime_reaches_driver(__u32 kind, const struct gl_call_stash *s) {
  switch (kind) {
    case GL_KIND_ALLOC:
      return s->a1 != 0;
    case GL_KIND_ALLOC_PITCH:
      return s->a2 != 0;
    case GL_KIND_FREE:
      return s->a0 != 0;
    case GL_KIND_RT_MEMCPY:
    case GL_KIND_MEMCPY:
      return s->a0 != 0 && s->a1 < GL_DIR_COUNT;
    default:
      return true;
  }
}

/* The first call of a process that the driver level did not see. */
static __always_inline void report_bypass(__u32 tgid, struct gl_proc_state *p, __u64 key) {
  if (!p) return;
  struct gl_bypass_key bk = {.tgid = tgid, .start_ns = p->start_ns};
  __u8 one = 1;
  if (bpf_map_update_elem(&runtime_bypass, &bk, &one, BPF_NOEXIST) != 0) return;
  struct gl_proc_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
  if (!ev) {
    count_stat(GL_STAT_EVENTS_DROPPED);
    return;
  }
  ev->h.type = GL_EV_RUNTIME_BYPASS;
  ev->h.tgid = tgid;
  ev->h.cgroup_key = key;
  ev->start_ns = p->start_ns;
  ev->released_bytes = 0;
  bpf_ringbuf_submit(ev, 0);
}

SEC("uretprobe")
int gl_rt_return(struct pt_regs *ctx) {
  __u64 tid = bpf_get_current_pid_tgid();
  __u64 cookie = bpf_get_attach_cookie(ctx);
  struct gl_thread_state *t = bpf_map_lookup_elem(&threads, &tid);
  if (!t || !t->runtime.call.cookie) {
    count_stat(GL_STAT_STASH_MISSING);
    return 0;
  }
  /* A return pops the return address: only the outer call's lands at its
   * entry stack pointer + 8. A nested runtime call's return is not ours; nor
   * is a tail-called one's, which returns through the same frame just before
   * the outer's (return probes fire innermost first). */
  if (PT_REGS_SP(ctx) != t->runtime.entry_sp + 8 || t->runtime.call.cookie != cookie) return 0;
  struct gl_call_stash s = t->runtime.call;
  bool driver_seen = t->runtime.driver_seen;
  t->runtime.call.cookie = 0;

  __u32 kind = GL_COOKIE_KIND(cookie);
  int rc = (int)PT_REGS_RC(ctx);
  if (kind == GL_KIND_RT_SET_DEVICE) {
    if (rc == 0) t->runtime_device_plus1 = (__u32)s.a0 + 1;
    return 0;
  }
  if (!runtime_reaches_driver(kind, &s)) return 0;
  if (runtime_mode != GL_RUNTIME_ON && driver_seen) {
    count_stat(GL_STAT_RUNTIME_LEFT_TO_DRIVER);
    return 0;
  }

  __u32 tgid = tid >> 32;
  __u64 key = current_cgroup_key();
  /* The driver's context tracking knows the device when it saw the context
   * calls; else the runtime's own: cudaSetDevice's, or its default, 0. */
  __u32 device = t->device;
  if (device == GL_DEVICE_UNKNOWN) device = t->runtime_device_plus1 ? t->runtime_device_plus1 - 1 : 0;
  struct gl_proc_state *p = process_for(tgid, key);
  if (p) t->process_known = 1;
  if (rc != 0) {
    if (!repeats_failed_init(tgid)) count_error(key, GL_COOKIE_CALL(cookie), device);
    return 0;
  }
  if (!driver_seen) report_bypass(tgid, p, key);
  count_stat(GL_STAT_RUNTIME_COUNTED);

  if (call_class(kind) == GL_KIND_LAUNCH || kind == GL_KIND_GRAPH) {
    count_launch_on(t, device, call_class(kind), s.a0);
    return 0;
  }
  struct gl_counters *c = counters_for(key, device);
  /* A copy's direction is in a1: the cudaMemcpyKind's, or the peer family's. */
  if (c) count_success(t, c, p, tgid, key, device, kind, 0, s.a1, &s);
  return 0;
}

#endif
