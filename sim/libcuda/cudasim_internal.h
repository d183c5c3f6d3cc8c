/*
 * Between the simulator's two sources: cudasim.c (state, devices, contexts,
 * streams, the original entry points) and cudasim_families.c (the 2D/3D,
 * array and peer copies, memsets, arrays, legacy and multi-device launches,
 * queries). Hidden symbols: nothing here is exported from libcuda.so.1.
 */
#ifndef GPULEDGER_CUDASIM_INTERNAL_H
#define GPULEDGER_CUDASIM_INTERNAL_H

#include "cuda_sim.h"

#define SIM_HIDDEN __attribute__((visibility("hidden")))

/* dev_mask: bit0 = dst must be a (non-null) device address, bit1 = src. */
SIM_HIDDEN CUresult sim_copy(unsigned long long dst, unsigned long long src, int dev_mask, int has_stream,
                             CUstream hStream);
SIM_HIDDEN CUresult sim_copy_peer(CUcontext dstContext, CUcontext srcContext, int has_stream, CUstream hStream);
SIM_HIDDEN CUresult sim_memset(unsigned long long dst, int has_stream, CUstream hStream);
/* An array's data, allocated like device memory; its handle is the address. */
SIM_HIDDEN CUresult sim_array_create(unsigned long long *out, unsigned long long bytes);
SIM_HIDDEN CUresult sim_array_destroy(unsigned long long handle);
SIM_HIDDEN CUresult sim_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, CUstream hStream);
SIM_HIDDEN CUresult sim_set_block_shape(CUfunction f, int x, int y, int z);
SIM_HIDDEN CUresult sim_launch_legacy(CUfunction f, int grid_width, int grid_height, CUstream hStream);
/* CUDA_ERROR_NOT_READY while work is pending, as the driver's queries. */
SIM_HIDDEN CUresult sim_stream_query(CUstream hStream);
SIM_HIDDEN CUresult sim_event_query(CUevent hEvent);
SIM_HIDDEN int sim_initialized(void);
/* cuGetProcAddress's table for cudasim_families.c's entry points. */
SIM_HIDDEN void *sim_find_family_proc(const char *name);

#endif
