/* The contract between bpf/lib_discovery.bpf.c and the agent's library
 * watcher (src/probes/library_discovery.cpp): fixed-width C types only. */
#ifndef GPULEDGER_LIB_DISCOVERY_H
#define GPULEDGER_LIB_DISCOVERY_H

#include "lib/abi_types.h"
#include "lib/events.h"

/* Kernel dev_t encoding (major << 20 | minor). */
struct gl_file_id {
  gl_u64 dev;
  gl_u64 ino;
};

/* What the agent decided about a file (the watcher's known_files values). */
enum gl_file_verdict {
  GL_FILE_PENDING = 0, /* reported, not judged yet */
  GL_FILE_DRIVER = 1,  /* the CUDA driver, probed: each later mapping is reported too */
  GL_FILE_OTHER = 2,   /* anything else: never reported again */
};

/* A file mapped for execution for the first time since it was last
 * reported. `file` is the inode the mapping really holds (on overlayfs the
 * backing layer's file, which is what a uprobe lands on), read from the VMA
 * in the kernel: no path, nothing the process could swap. [start, end) is
 * the mapping, as /proc/PID/map_files names it. */
struct gl_lib_map_event {
  struct gl_event_header h;
  struct gl_file_id file;
  gl_u64 start;
  gl_u64 end;
  gl_u32 known_driver; /* a driver already probed, mapped by another process */
  gl_u32 held;         /* the process was stopped (SIGSTOP) until the agent has looked: continue it */
  char name[64]; /* the file's name (no directory), for the log only */
};

/* A process the watcher holds (stopped) until the agent continues it. Kept in
 * a map the agent pins, so an agent that dies while holding one (SIGKILL, OOM)
 * has its successor continue it; the start time tells a recycled pid apart. */
struct gl_held_process {
  gl_u64 start_boottime; /* the process's start, ns since boot (/proc/PID/stat starttime) */
  gl_u64 held_at;        /* bpf_ktime_get_ns() when it was stopped (CLOCK_MONOTONIC) */
};

#endif
