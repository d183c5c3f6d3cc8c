/* What a launch's arguments say: its threads (grid x block) and launches,
 * for every launch shape the driver has. Kernel-only; uses the includer's
 * func_blocks map (cuFuncSetBlockShape's blocks). */
#ifndef GPULEDGER_CUDA_LAUNCH_ARGS_BPF_H
#define GPULEDGER_CUDA_LAUNCH_ARGS_BPF_H

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

#endif
