/* A workload's key in the kernel: its cgroup v2 id, or on hosts whose
 * workloads live in cgroup v1 only, the v1 cgroup's id with GL_CGROUP_V1_BIT.
 * Kernel-only. Expects from its includer the load-time settings
 * cgroup_v2_root_id and v1_fallback_subsys. */
#ifndef GPULEDGER_CGROUP_KEY_BPF_H
#define GPULEDGER_CGROUP_KEY_BPF_H

#include "lib/core_fixes.bpf.h"

static __always_inline struct kernfs_node *v1_cgroup_kn(struct task_struct *task) {
  struct cgroup_subsys_state *css;
  __u32 idx = v1_fallback_subsys;
  if (idx >= bpf_core_field_size(task->cgroups->subsys) / sizeof(void *)) return NULL;
  css = BPF_CORE_READ(task, cgroups, subsys[idx]);
  return css ? BPF_CORE_READ(css, cgroup, kn) : NULL;
}

/* The workload key of the calling task: its cgroup v2 id, unless it sits in the
 * v2 root on a host whose workloads live in cgroup v1 only. */
static __always_inline __u64 current_cgroup_key(void) {
  __u64 id = bpf_get_current_cgroup_id();
  if (id != cgroup_v2_root_id || v1_fallback_subsys == 0xffffffff) return id;
  struct kernfs_node *kn = v1_cgroup_kn((struct task_struct *)bpf_get_current_task());
  if (!kn) return id;
  return BPF_CORE_READ(kn, id) | GL_CGROUP_V1_BIT;
}

#endif
