/* Kernel layout differences handled with CO-RE flavours, in one place. */
#ifndef GPULEDGER_CORE_FIXES_BPF_H
#define GPULEDGER_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* Linux 6.15 renamed kernfs_node.parent to __parent (now RCU-protected). */
struct kernfs_node___pre615 {
  struct kernfs_node *parent;
} __attribute__((preserve_access_index));

struct kernfs_node___615 {
  struct kernfs_node *__parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *gl_kernfs_parent(struct kernfs_node *kn) {
  if (bpf_core_field_exists(struct kernfs_node___615, __parent))
    return BPF_CORE_READ((struct kernfs_node___615 *)kn, __parent);
  return BPF_CORE_READ((struct kernfs_node___pre615 *)kn, parent);
}

/* libbpf before 1.2 has no PT_REGS_PARM6; the sixth integer argument of the
 * x86-64 SysV ABI is in r9. */
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#endif

#endif
