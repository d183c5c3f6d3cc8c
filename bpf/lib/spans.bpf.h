/* Busy spans per process, context and stream (gl_open_spans, cuda_probes.h):
 * a launch opens its stream's span, a wait that returns ends it, and the time
 * between adds to the workload's busy_ns. Kernel-only; uses the includer's
 * open_spans map, counters_of and count_stat. */
#ifndef GPULEDGER_SPANS_BPF_H
#define GPULEDGER_SPANS_BPF_H

/* The default stream's handles (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) share one slot. */
static __always_inline __u64 span_stream(__u64 stream) { return stream <= 2 ? 0 : stream; }

/* A launch opens its stream's span in the thread's context unless one is
 * open: the GPU is taken to be busy with that work from then until a wait for
 * it returns (cuda_probes.h, gl_open_spans). */
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

#endif
