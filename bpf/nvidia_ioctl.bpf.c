// SPDX-License-Identifier: GPL-2.0
/* The NVIDIA driver ioctl plane: counts ioctl(2) calls and their time per
 * workload (cgroup v2 id), device (major, minor) and escape number, for the
 * device files userspace names in ioctl_devices (nvidia.ko's major 195 and
 * nvidia-uvm's dynamic major by default). Payloads are never read.
 *
 * BTF raw tracepoints on sys_enter / sys_exit: they need neither kprobes,
 * ftrace trampolines nor a tracefs mount. Every syscall on the node passes
 * through here, so both programs leave after one compare for anything that is
 * not ioctl(2). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "nvidia_ioctl.h"
#include "lib/task_files.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define NR_IOCTL 16 /* x86-64 */
#define GL_MINORBITS 20
#define GL_MINORMASK ((1U << GL_MINORBITS) - 1)

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 64);
  __type(key, struct gl_ioctl_filter_key);
  __type(value, struct gl_ioctl_filter_value);
} ioctl_devices SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384); /* threads inside a traced ioctl at once */
  __type(key, __u64);         /* pid_tgid */
  __type(value, struct gl_ioctl_inflight);
} ioctl_inflight SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 16384); /* resized by the agent before load */
  __type(key, struct gl_ioctl_key);
  __type(value, struct gl_ioctl_value);
} ioctl_counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, GL_IOCTL_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} ioctl_stats SEC(".maps");

static __always_inline void bump_stat(__u32 which) {
  __u64 *n = bpf_map_lookup_elem(&ioctl_stats, &which);
  if (n) *n += 1; /* per-CPU: no atomics needed */
}

SEC("tp_btf/sys_enter")
int BPF_PROG(gl_ioctl_enter, struct pt_regs *regs, long id) {
  if (id != NR_IOCTL) return 0;

  long fd = BPF_CORE_READ(regs, di);
  __u32 cmd = (__u32)BPF_CORE_READ(regs, si);
  struct file *file = fd_file(bpf_get_current_task_btf(), fd);
  if (!file) return 0;
  __u32 rdev = BPF_CORE_READ(file, f_inode, i_rdev);
  struct gl_ioctl_filter_key fk = {.major = rdev >> GL_MINORBITS, .minor = rdev & GL_MINORMASK};
  struct gl_ioctl_filter_value *how = bpf_map_lookup_elem(&ioctl_devices, &fk);
  if (!how) {
    fk.minor = GL_IOCTL_ANY_MINOR;
    how = bpf_map_lookup_elem(&ioctl_devices, &fk);
    if (!how) return 0;
  }

  struct gl_ioctl_inflight call = {
      .start_ns = bpf_ktime_get_ns(),
      .major = rdev >> GL_MINORBITS,
      .minor = rdev & GL_MINORMASK,
      .escape = how->escape_mode == GL_IOCTL_ESCAPE_FULL ? cmd : (cmd & 0xff) /* _IOC_NR */,
  };
  __u64 tid = bpf_get_current_pid_tgid();
  if (bpf_map_update_elem(&ioctl_inflight, &tid, &call, BPF_ANY) != 0) bump_stat(GL_IOCTL_STAT_INFLIGHT_FULL);
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(gl_ioctl_exit, struct pt_regs *regs, long ret) {
  if (BPF_CORE_READ(regs, orig_ax) != NR_IOCTL) return 0;

  __u64 tid = bpf_get_current_pid_tgid();
  struct gl_ioctl_inflight *call = bpf_map_lookup_elem(&ioctl_inflight, &tid);
  if (!call) return 0;
  __u64 ns = bpf_ktime_get_ns() - call->start_ns;
  struct gl_ioctl_key key = {
      .cgroup_id = bpf_get_current_cgroup_id(),
      .major = call->major,
      .minor = call->minor,
      .escape = call->escape,
  };
  bpf_map_delete_elem(&ioctl_inflight, &tid);

  struct gl_ioctl_value *v = bpf_map_lookup_elem(&ioctl_counters, &key);
  if (!v) {
    struct gl_ioctl_value zero = {};
    if (bpf_map_update_elem(&ioctl_counters, &key, &zero, BPF_NOEXIST) != 0) {
      bump_stat(GL_IOCTL_STAT_COUNTERS_FULL);
      key.cgroup_id = 0;
      bpf_map_update_elem(&ioctl_counters, &key, &zero, BPF_NOEXIST);
    }
    v = bpf_map_lookup_elem(&ioctl_counters, &key);
    if (!v) {
      bump_stat(GL_IOCTL_STAT_DROPPED);
      return 0;
    }
  }
  v->calls += 1; /* per-CPU values: no atomics needed */
  v->ns += ns;
  return 0;
}
