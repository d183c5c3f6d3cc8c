/* The CUDA driver API structs the probes read, mirrored field for field from
 * NVIDIA's cuda.h (x86-64 layouts; the unsuffixed legacy forms take the _v1
 * structs, whose sizes and device pointers are 32 bits wide). The probes read
 * only a few fields, at the offsets these mirrors give; a test compiles them
 * beside the real cuda.h and checks every offset and size
 * (tests/probes/cuda_struct_layouts_test.cpp), so a drift is a build failure.
 * No kernel or libc headers: the BPF programs and C++ include it as-is. */
#ifndef GPULEDGER_CUDA_STRUCT_LAYOUTS_H
#define GPULEDGER_CUDA_STRUCT_LAYOUTS_H

#include "cuda_probes.h"

/* CUmemorytype */
#define GL_CU_MEMORYTYPE_HOST 1
#define GL_CU_MEMORYTYPE_DEVICE 2
#define GL_CU_MEMORYTYPE_ARRAY 3
#define GL_CU_MEMORYTYPE_UNIFIED 4

/* CUDA_MEMCPY2D (_v2) */
struct gl_cu_memcpy2d {
  gl_u64 srcXInBytes, srcY;
  gl_u32 srcMemoryType, pad0;
  gl_u64 srcHost, srcDevice, srcArray, srcPitch;
  gl_u64 dstXInBytes, dstY;
  gl_u32 dstMemoryType, pad1;
  gl_u64 dstHost, dstDevice, dstArray, dstPitch;
  gl_u64 WidthInBytes, Height;
};

/* CUDA_MEMCPY2D_v1: 32-bit sizes and device pointers */
struct gl_cu_memcpy2d_v1 {
  gl_u32 srcXInBytes, srcY, srcMemoryType, pad0;
  gl_u64 srcHost;
  gl_u32 srcDevice, pad1;
  gl_u64 srcArray;
  gl_u32 srcPitch;
  gl_u32 dstXInBytes, dstY, dstMemoryType;
  gl_u64 dstHost;
  gl_u32 dstDevice, pad2;
  gl_u64 dstArray;
  gl_u32 dstPitch;
  gl_u32 WidthInBytes, Height, pad3;
};

/* CUDA_MEMCPY3D (_v2); CUDA_MEMCPY3D_PEER has the same layout with the
 * reserved pointers replaced by the source and destination contexts. */
struct gl_cu_memcpy3d {
  gl_u64 srcXInBytes, srcY, srcZ, srcLOD;
  gl_u32 srcMemoryType, pad0;
  gl_u64 srcHost, srcDevice, srcArray, reserved0, srcPitch, srcHeight;
  gl_u64 dstXInBytes, dstY, dstZ, dstLOD;
  gl_u32 dstMemoryType, pad1;
  gl_u64 dstHost, dstDevice, dstArray, reserved1, dstPitch, dstHeight;
  gl_u64 WidthInBytes, Height, Depth;
};

/* CUDA_MEMCPY3D_v1 */
struct gl_cu_memcpy3d_v1 {
  gl_u32 srcXInBytes, srcY, srcZ, srcLOD, srcMemoryType, pad0;
  gl_u64 srcHost;
  gl_u32 srcDevice, pad1;
  gl_u64 srcArray, reserved0;
  gl_u32 srcPitch, srcHeight;
  gl_u32 dstXInBytes, dstY, dstZ, dstLOD, dstMemoryType, pad2;
  gl_u64 dstHost;
  gl_u32 dstDevice, pad3;
  gl_u64 dstArray, reserved1;
  gl_u32 dstPitch, dstHeight;
  gl_u32 WidthInBytes, Height, Depth, pad4;
};

/* CUDA_ARRAY_DESCRIPTOR (_v2) and its _v1 */
struct gl_cu_array_descriptor {
  gl_u64 Width, Height;
  gl_u32 Format, NumChannels;
};
struct gl_cu_array_descriptor_v1 {
  gl_u32 Width, Height, Format, NumChannels;
};

/* CUDA_ARRAY3D_DESCRIPTOR (_v2) and its _v1 */
struct gl_cu_array3d_descriptor {
  gl_u64 Width, Height, Depth;
  gl_u32 Format, NumChannels, Flags, pad0;
};
struct gl_cu_array3d_descriptor_v1 {
  gl_u32 Width, Height, Depth, Format, NumChannels, Flags;
};

/* CUDA_LAUNCH_PARAMS (cuLaunchCooperativeKernelMultiDevice's list) */
struct gl_cu_launch_params {
  gl_u64 function;
  gl_u32 gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, pad0;
  gl_u64 hStream, kernelParams;
};

/* CUextent3D, and CUDA_MEMCPY3D_BATCH_OP's extent (cuMemcpy3DBatchAsync) */
struct gl_cu_extent3d {
  gl_u64 width, height, depth;
};
#define GL_CU_MEMCPY3D_BATCH_OP_SIZE 112 /* sizeof(CUDA_MEMCPY3D_BATCH_OP) */
#define GL_CU_MEMCPY3D_BATCH_OP_EXTENT 80 /* offsetof(CUDA_MEMCPY3D_BATCH_OP, extent) */

/* CUarray_format element sizes (bytes per channel) the probes know. */
#define GL_CU_AD_FORMAT_UNSIGNED_INT8 0x01
#define GL_CU_AD_FORMAT_UNSIGNED_INT16 0x02
#define GL_CU_AD_FORMAT_UNSIGNED_INT32 0x03
#define GL_CU_AD_FORMAT_SIGNED_INT8 0x08
#define GL_CU_AD_FORMAT_SIGNED_INT16 0x09
#define GL_CU_AD_FORMAT_SIGNED_INT32 0x0a
#define GL_CU_AD_FORMAT_HALF 0x10
#define GL_CU_AD_FORMAT_FLOAT 0x20

/* Bounds on what one call's descriptors are read for: devices in a
 * multi-device launch, mipmap levels, copies in a batch. */
#define GL_MULTI_LAUNCH_MAX 16
#define GL_MIPMAP_LEVELS_MAX 16
#define GL_BATCH_COPIES_MAX 4096

#endif
