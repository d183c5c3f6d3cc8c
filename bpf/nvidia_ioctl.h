/* The contract between bpf/nvidia_ioctl.bpf.c and src/device/ioctl_plane.cpp:
 * the NVIDIA driver ioctl plane. Fixed-width types only (lib/abi_types.h). */
#ifndef GPULEDGER_NVIDIA_IOCTL_H
#define GPULEDGER_NVIDIA_IOCTL_H

#include "lib/abi_types.h"

/* A filter entry whose minor is this matches every minor of its major. */
#define GL_IOCTL_ANY_MINOR 0xffffffffu

/* How the escape (the per-call key) is taken from the ioctl request number. */
enum gl_ioctl_escape_mode {
  GL_IOCTL_ESCAPE_NR = 0,   /* _IOC_NR(cmd): NVIDIA's nvidia.ko (NV_ESC_* values) */
  GL_IOCTL_ESCAPE_FULL = 1, /* the whole request: nvidia-uvm's plain command numbers */
};

/* Which device files are traced: (major, minor) or (major, GL_IOCTL_ANY_MINOR). */
struct gl_ioctl_filter_key {
  gl_u32 major;
  gl_u32 minor;
};
struct gl_ioctl_filter_value {
  gl_u32 escape_mode; /* enum gl_ioctl_escape_mode */
  gl_u32 pad;
};

/* Counters are kept per workload (cgroup v2 id), device and escape. */
struct gl_ioctl_key {
  gl_u64 cgroup_id; /* 0: the overflow bucket (counter map full) */
  gl_u32 major;
  gl_u32 minor;
  gl_u32 escape;
  gl_u32 pad;
};
struct gl_ioctl_value {
  gl_u64 calls;
  gl_u64 ns; /* time from syscall entry to exit */
};

/* A call in flight, per thread, from sys_enter to sys_exit. */
struct gl_ioctl_inflight {
  gl_u64 start_ns;
  gl_u32 major;
  gl_u32 minor;
  gl_u32 escape;
  gl_u32 pad;
};

/* Self-accounting, a per-CPU array indexed by these. */
enum gl_ioctl_stat {
  GL_IOCTL_STAT_INFLIGHT_FULL = 0, /* the in-flight map was full: the call was not counted */
  GL_IOCTL_STAT_COUNTERS_FULL = 1, /* the counter map was full: counted under cgroup id 0 */
  GL_IOCTL_STAT_DROPPED = 2,       /* not even the overflow bucket could be made */
  GL_IOCTL_STAT_COUNT = 3,
};

#endif
