/* Every other driver call: its arguments kept at entry (gl_call_entry) and
 * counted at its return (gl_call_return) - allocations and frees, copies,
 * memsets, waits, contexts, errors, export tables. Kernel-only; part of
 * cuda_probes.bpf.c. */
#ifndef GPULEDGER_CUDA_DRIVER_CALLS_BPF_H
#define GPULEDGER_CUDA_DRIVER_CALLS_BPF_H

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

#endif
