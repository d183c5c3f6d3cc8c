// SPDX-License-Identifier: GPL-2.0
/* Finds CUDA driver libraries as processes open them, so the agent can attach
 * to a new copy (a container's, a newly installed driver's) before the process
 * makes its first call. Runs on every file open system-wide, so it rejects on
 * the file name first and reports each file (device, inode) only once. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gpuledger_abi.h"
#include "task_files.h"

char LICENSE[] SEC("license") = "GPL";

/* Files already reported: the agent keeps attached ones here and deletes the
 * ones it could not resolve, so they are reported again at their next open. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct gl_file_id);
  __type(value, __u8);
} known_files SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 16);
} lib_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lib_events_dropped SEC(".maps");

static const char wanted[] = "libcuda.so";

/* On the return of open(2)/openat(2)/openat2(2): a BTF raw tracepoint, which
 * needs neither kprobes, ftrace trampolines nor a tracefs mount - each of
 * which some kernels lack. Every other syscall leaves after one compare. */
static __always_inline bool is_open_syscall(long nr) {
  return nr == 2 /* open */ || nr == 257 /* openat */ || nr == 437 /* openat2 */;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(gl_file_open, struct pt_regs *regs, long ret) {
  if (ret < 0 || !is_open_syscall(BPF_CORE_READ(regs, orig_ax))) return 0;
  struct file *file = fd_file(bpf_get_current_task_btf(), ret);
  if (!file) return 0;

  char name[sizeof(wanted)];
  const unsigned char *dname = BPF_CORE_READ(file, f_path.dentry, d_name.name);
  if (bpf_probe_read_kernel_str(name, sizeof(name), dname) != sizeof(name)) return 0;
  for (int i = 0; i < sizeof(wanted) - 1; i++)
    if (name[i] != wanted[i]) return 0;

  struct inode *inode = BPF_CORE_READ(file, f_inode);
  struct gl_file_id id = {.dev = BPF_CORE_READ(inode, i_sb, s_dev), .ino = BPF_CORE_READ(inode, i_ino)};
  __u8 pending = 0;
  if (bpf_map_update_elem(&known_files, &id, &pending, BPF_NOEXIST) != 0) return 0;

  struct gl_lib_open_event *ev = bpf_ringbuf_reserve(&lib_events, sizeof(*ev), 0);
  if (!ev) {
    __u32 zero = 0;
    __u64 *n = bpf_map_lookup_elem(&lib_events_dropped, &zero);
    if (n) __sync_fetch_and_add(n, 1);
    bpf_map_delete_elem(&known_files, &id); /* report it at the next open */
    return 0;
  }
  ev->h.type = GL_EV_LIB_OPEN;
  ev->h.tgid = bpf_get_current_pid_tgid() >> 32;
  ev->h.cgroup_key = 0;
  ev->file = id;
  bpf_probe_read_kernel_str(ev->name, sizeof(ev->name), dname);
  bpf_ringbuf_submit(ev, 0);
  return 0;
}
