/* What a call counts as, whichever level (driver or runtime) sees it, and
 * the driver side of the per-thread de-duplication between the two levels
 * (cuda_runtime.bpf.h has the other side). Kernel-only; reads the load-time
 * setting runtime_mode. */
#ifndef GPULEDGER_CUDA_CALL_CLASS_BPF_H
#define GPULEDGER_CUDA_CALL_CLASS_BPF_H

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

/* The driver side of the per-thread de-duplication (cuda_runtime.bpf.h has
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

#endif
