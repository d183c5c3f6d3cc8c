// SPDX-License-Identifier: GPL-2.0
/* Finds the files processes map for execution, so the agent can check each
 * one for the CUDA driver API - whatever it is called - and attach before the
 * process makes its first call. Runs on every syscall exit system-wide: all
 * but mmap(2) and mprotect(2) leave after one compare, and each file (the
 * inode its mapping really holds) is reported once until the agent forgets it.
 *
 * Why the VMA and not the fd or a path: a process controls its fd table and
 * its paths and can change either between the call and the agent's look; the
 * VMA's file is what the kernel mapped and what a uprobe will land on (on
 * overlayfs the backing layer's inode, shared by every container of an
 * image). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "lib_discovery.h"

char LICENSE[] SEC("license") = "GPL";

#define GL_PROT_EXEC 0x4
#define GL_MAP_ANONYMOUS 0x20
#define GL_NR_MMAP 9
#define GL_NR_MPROTECT 10

/* Files already reported, with the agent's verdict (enum gl_file_verdict):
 * it marks each one it has judged and deletes those it could not resolve, so
 * they are reported again at their next mapping. LRU: a node maps more distinct files
 * over months than any fixed table holds; an evicted one is reported once more
 * and the agent's own cache answers it. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct gl_file_id);
  __type(value, __u8);
} known_files SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 18);
} lib_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lib_events_dropped SEC(".maps");

/* The agent itself maps a file to learn which inode the kernel would probe
 * for it (on overlayfs: the backing layer's, which no path the agent can
 * trust names). Its own mappings are answered here, by start address, and
 * never reported. */
const volatile __u32 agent_tgid = 0;
/* Hold the first process that maps a never-seen file named like the driver
 * (SIGSTOP; the agent sends SIGCONT once its probes are in place, or it has
 * decided not to probe): its first calls, made right after dlopen returns,
 * are then counted too. */
const volatile bool hold_new_drivers = false;
#define GL_SIGSTOP 19
/* A process is held only while the agent's event loop is seen alive: a hung
 * or stopped agent must never stop tenants it will not continue. */
#define GL_HEARTBEAT_FRESH_NS 2000000000LL

/* Processes held now (tgid -> struct gl_held_process); the agent deletes an
 * entry when it continues the process. Full: nobody more is held. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct gl_held_process);
} held_processes SEC(".maps");

/* The agent's heartbeat: CLOCK_MONOTONIC ns, written by its event loop. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} agent_heartbeat SEC(".maps");

static __always_inline bool hold_current(__u32 tgid) {
  __u32 zero = 0;
  __u64 *beat = bpf_map_lookup_elem(&agent_heartbeat, &zero);
  __u64 now = bpf_ktime_get_ns();
  if (!beat || *beat == 0 || (__s64)(now - *beat) > GL_HEARTBEAT_FRESH_NS) return false;
  struct task_struct *task = bpf_get_current_task_btf();
  struct gl_held_process held = {.start_boottime = BPF_CORE_READ(task, group_leader, start_boottime),
                                 .held_at = now};
  /* Recorded before the signal, so whoever reads the map continues it. */
  if (bpf_map_update_elem(&held_processes, &tgid, &held, BPF_NOEXIST) != 0) return false;
  if (bpf_send_signal(GL_SIGSTOP) == 0) return true;
  bpf_map_delete_elem(&held_processes, &tgid);
  return false;
}

static const char driver_name[] = "libcuda.so";

static __always_inline bool named_like_driver(const unsigned char *dname) {
  char name[sizeof(driver_name)];
  if (bpf_probe_read_kernel_str(name, sizeof(name), dname) != sizeof(name)) return false;
  for (int i = 0; i < sizeof(driver_name) - 1; i++)
    if (name[i] != driver_name[i]) return false;
  return true;
}

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 64);
  __type(key, __u64);
  __type(value, struct gl_file_id);
} self_maps SEC(".maps");

struct vma_look {
  struct gl_file_id id;
  __u64 start;
  __u64 end;
  const unsigned char *name;
  bool found;
};

static long read_vma(struct task_struct *task, struct vm_area_struct *vma, void *ctx) {
  struct vma_look *look = ctx;
  struct file *file = BPF_CORE_READ(vma, vm_file);
  if (!file) return 0;
  struct inode *inode = BPF_CORE_READ(file, f_inode);
  look->id.dev = BPF_CORE_READ(inode, i_sb, s_dev);
  look->id.ino = BPF_CORE_READ(inode, i_ino);
  look->start = BPF_CORE_READ(vma, vm_start);
  look->end = BPF_CORE_READ(vma, vm_end);
  look->name = BPF_CORE_READ(file, f_path.dentry, d_name.name);
  look->found = true;
  return 0;
}

/* On the return of mmap(2) and mprotect(2) that leave a file mapped
 * executable: a BTF raw tracepoint, which needs neither kprobes, ftrace
 * trampolines nor a tracefs mount - each of which some kernels lack. */
SEC("tp_btf/sys_exit")
int BPF_PROG(gl_exec_map, struct pt_regs *regs, long ret) {
  long nr = BPF_CORE_READ(regs, orig_ax);
  if (nr != GL_NR_MMAP && nr != GL_NR_MPROTECT) return 0;
  if ((unsigned long)ret >= (unsigned long)-4095) return 0; /* failed */
  if (!(BPF_CORE_READ(regs, dx) & GL_PROT_EXEC)) return 0;
  __u64 addr;
  if (nr == GL_NR_MMAP) {
    if (BPF_CORE_READ(regs, r10) & GL_MAP_ANONYMOUS) return 0;
    addr = ret;
  } else {
    addr = BPF_CORE_READ(regs, di);
  }

  struct vma_look look = {};
  if (bpf_find_vma(bpf_get_current_task_btf(), addr, read_vma, &look, 0) != 0 || !look.found) return 0;

  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (agent_tgid && tgid == agent_tgid) {
    bpf_map_update_elem(&self_maps, &look.start, &look.id, BPF_ANY);
    return 0;
  }

  __u32 known_driver = 0;
  __u8 *verdict = bpf_map_lookup_elem(&known_files, &look.id);
  if (verdict) {
    if (*verdict != GL_FILE_DRIVER) return 0;
    known_driver = 1; /* a process taking up the driver: the agent looks for its runtime */
  } else {
    __u8 pending = GL_FILE_PENDING;
    if (bpf_map_update_elem(&known_files, &look.id, &pending, BPF_NOEXIST) != 0) return 0;
  }

  struct gl_lib_map_event *ev = bpf_ringbuf_reserve(&lib_events, sizeof(*ev), 0);
  if (!ev) {
    __u32 zero = 0;
    __u64 *n = bpf_map_lookup_elem(&lib_events_dropped, &zero);
    if (n) __sync_fetch_and_add(n, 1);
    if (!known_driver) bpf_map_delete_elem(&known_files, &look.id); /* report it at its next mapping */
    return 0;
  }
  ev->h.type = GL_EV_LIB_MAP;
  ev->h.tgid = tgid;
  ev->h.cgroup_key = 0;
  ev->file = look.id;
  ev->start = look.start;
  ev->end = look.end;
  ev->known_driver = known_driver;
  /* Only once the report is sure to reach the agent (reserved), so a held
   * process is always continued. */
  ev->held = !known_driver && hold_new_drivers && named_like_driver(look.name) && hold_current(tgid);
  bpf_probe_read_kernel_str(ev->name, sizeof(ev->name), look.name);
  bpf_ringbuf_submit(ev, 0);
  return 0;
}
