/* A calling thread's state (struct gl_thread_state, cuda_probes.h): its
 * context stack and device, created at its first call. Kernel-only; uses the
 * includer's `threads` map and count_stat. */
#ifndef GPULEDGER_THREAD_STATE_BPF_H
#define GPULEDGER_THREAD_STATE_BPF_H

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

/* The thread's current context (0 when none was seen). */
static __always_inline __u64 current_ctx(const struct gl_thread_state *t) {
  return t && t->depth ? t->ctx_stack[(t->depth - 1) & (GL_CTX_STACK - 1)] : 0;
}

#endif
