/* What a copy's, a memset's and an array's arguments say: bytes and
 * direction, from registers or the descriptors they point to (the layouts in
 * cuda_struct_layouts.h). Kernel-only; part of cuda_probes.bpf.c. */
#ifndef GPULEDGER_CUDA_COPY_ARGS_BPF_H
#define GPULEDGER_CUDA_COPY_ARGS_BPF_H

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

#endif
