/* cuda_probes.bpf.c's per-workload and per-process state: a workload's
 * counters (created at its first call, which reports its cgroup path), and a
 * process's live bytes and start. Kernel-only; uses the program's maps
 * (workload_counters, processes, events) and count_stat. */
#ifndef GPULEDGER_CUDA_WORKLOADS_BPF_H
#define GPULEDGER_CUDA_WORKLOADS_BPF_H

/* Rare: the first call of a new workload. Capture its cgroup path now, while
 * the cgroup surely exists, so even a short-lived pod can be named later. */
static __noinline void emit_new_workload(__u64 key) {
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  struct kernfs_node *kn;
  struct gl_new_workload_event *ev;

  ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
  if (!ev) {
    count_stat(GL_STAT_EVENTS_DROPPED);
    return;
  }
  ev->h.type = GL_EV_NEW_WORKLOAD;
  ev->h.tgid = bpf_get_current_pid_tgid() >> 32;
  ev->h.cgroup_key = key;
  ev->depth = 0;
  ev->truncated = 0;
  if (key & GL_CGROUP_V1_BIT)
    kn = v1_cgroup_kn(task);
  else
    kn = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);
  for (int i = 0; i < GL_PATH_DEPTH; i++) {
    if (!kn) break;
    struct kernfs_node *parent = gl_kernfs_parent(kn);
    if (!parent) break; /* the root's own name is not part of the path */
    bpf_probe_read_kernel_str(ev->components[i], GL_NAME_LEN, BPF_CORE_READ(kn, name));
    ev->depth = i + 1;
    kn = parent;
  }
  if (kn && gl_kernfs_parent(kn)) ev->truncated = 1;
  bpf_ringbuf_submit(ev, 0);
}

static __always_inline struct gl_counters *counters_for(__u64 cgroup_key, __u32 device) {
  struct gl_workload_key key = {.cgroup_key = cgroup_key, .device = device};
  struct gl_counters *c = bpf_map_lookup_elem(&workload_counters, &key);
  if (c) return c;
  long err = bpf_map_update_elem(&workload_counters, &key, &zero_counters, BPF_NOEXIST);
  if (err == 0) {
    emit_new_workload(cgroup_key);
  } else if (err != -17 /* EEXIST: another CPU won the race */) {
    /* E2BIG: the map is full. Anything else (ENOMEM from a map that is not
     * preallocated, EBUSY from a bucket locked on this CPU) is the kernel
     * failing to insert an entry before the map is full. */
    count_stat(err == -7 ? GL_STAT_WORKLOADS_FULL : GL_STAT_WORKLOADS_NOMEM);
    key.cgroup_key = 0; /* the overflow bucket, created by the agent before attach */
    key.device = GL_DEVICE_UNKNOWN;
  }
  return bpf_map_lookup_elem(&workload_counters, &key);
}

/* Counters of a workload other than the caller's (an allocation's owner, an
 * exiting process's): never created here, as the path would be the caller's. */
static __always_inline struct gl_counters *counters_of(__u64 cgroup_key, __u32 device) {
  struct gl_workload_key key = {.cgroup_key = cgroup_key, .device = device};
  struct gl_counters *c = bpf_map_lookup_elem(&workload_counters, &key);
  if (c) return c;
  key.cgroup_key = 0;
  key.device = GL_DEVICE_UNKNOWN;
  return bpf_map_lookup_elem(&workload_counters, &key);
}

/* A process's live-bytes slot for a device: ordinals past the array share the
 * last slot. The barrier keeps the compiler from indexing with the unchecked
 * value, which the verifier would reject. */
static __always_inline __u64 *live_slot(struct gl_proc_state *p, __u32 device) {
  __u64 slot = device < GL_MAX_DEVICES ? device : GL_MAX_DEVICES; /* 64-bit: no zero-extension after the check */
  barrier_var(slot);
  if (slot > GL_MAX_DEVICES) return NULL;
  return &p->live_bytes[slot];
}

static __always_inline __u64 task_start_ns(void) {
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  return BPF_CORE_READ(task, group_leader, start_time);
}

static __always_inline struct gl_proc_state *process_for(__u32 tgid, __u64 key) {
  struct gl_proc_state *p = bpf_map_lookup_elem(&processes, &tgid);
  if (p) return p;

  struct gl_proc_state fresh = {.start_ns = task_start_ns(), .cgroup_key = key};
  if (bpf_map_update_elem(&processes, &tgid, &fresh, BPF_NOEXIST) == 0) {
    struct gl_proc_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
    if (ev) {
      ev->h.type = GL_EV_PROC_START;
      ev->h.tgid = tgid;
      ev->h.cgroup_key = key;
      ev->start_ns = fresh.start_ns;
      ev->released_bytes = 0;
      bpf_ringbuf_submit(ev, 0);
    } else {
      count_stat(GL_STAT_EVENTS_DROPPED);
    }
  }
  p = bpf_map_lookup_elem(&processes, &tgid);
  if (!p) count_stat(GL_STAT_PROCS_FULL);
  return p;
}

#endif
