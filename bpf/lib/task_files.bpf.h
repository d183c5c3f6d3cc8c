/* The open files of a task, read in BPF: what the syscall tracepoints need
 * to go from a file descriptor to its struct file. */
#ifndef GPULEDGER_TASK_FILES_BPF_H
#define GPULEDGER_TASK_FILES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

/* The file behind `fd` in `task`'s table, or NULL for a closed or invalid one. */
static __always_inline struct file *fd_file(struct task_struct *task, long fd) {
  struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds)) return NULL;
  struct file **fds = BPF_CORE_READ(fdt, fd);
  struct file *file = NULL;
  bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
  return file;
}

#endif
