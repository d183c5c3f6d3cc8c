/* The ring-buffer events' common header and types, shared by the CUDA probes
 * (cuda_probes.h) and the library watcher (lib_discovery.h). */
#ifndef GPULEDGER_EVENTS_H
#define GPULEDGER_EVENTS_H

#include "lib/abi_types.h"

/* Events to userspace: rare by construction (a new workload, a process that
 * starts or exits its CUDA life, a file first mapped for execution). */
enum gl_event_type {
  GL_EV_NEW_WORKLOAD = 1,
  GL_EV_PROC_START = 2,
  GL_EV_PROC_EXIT = 3,
  GL_EV_LIB_MAP = 4,
  GL_EV_RUNTIME_BYPASS = 5, /* a gl_proc_event: the process's runtime reached the driver around its exported symbols */
};

struct gl_event_header {
  gl_u32 type;
  gl_u32 tgid;
  gl_u64 cgroup_key;
};

#endif
