/* Launches: the entry-only program for the hottest calls (gl_launch), and
 * the counting every launch shape shares. Kernel-only; part of
 * cuda_probes.bpf.c. */
#ifndef GPULEDGER_CUDA_LAUNCHES_BPF_H
#define GPULEDGER_CUDA_LAUNCHES_BPF_H

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

#endif
