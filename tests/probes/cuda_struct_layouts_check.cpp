// Compiled, never run: the struct mirrors the probes read
// (bpf/cuda_struct_layouts.h) against NVIDIA's real cuda.h, field by field.
// A size or offset that differs is a build failure, so the probes read 2D/3D
// copy descriptors, array descriptors and multi-device launch lists where the
// real driver's callers write them.
#define __CUDA_API_VERSION_INTERNAL 1  // declares the legacy _v1 structs too
#include <cuda.h>

#include <cstddef>

#include "cuda_struct_layouts.h"

#define SAME_FIELD(mirror, real, field)                                              \
  static_assert(offsetof(mirror, field) == offsetof(real, field), #real "." #field); \
  static_assert(sizeof(((mirror*)nullptr)->field) == sizeof(((real*)nullptr)->field), #real "." #field " size")
#define SAME_SIZE(mirror, real) static_assert(sizeof(mirror) == sizeof(real), "sizeof " #real)

#define SAME_COPY_SIDES(mirror, real)                  \
  SAME_FIELD(mirror, real, srcMemoryType);             \
  SAME_FIELD(mirror, real, srcHost);                   \
  SAME_FIELD(mirror, real, srcDevice);                 \
  SAME_FIELD(mirror, real, srcArray);                  \
  SAME_FIELD(mirror, real, srcPitch);                  \
  SAME_FIELD(mirror, real, dstMemoryType);             \
  SAME_FIELD(mirror, real, dstHost);                   \
  SAME_FIELD(mirror, real, dstDevice);                 \
  SAME_FIELD(mirror, real, dstArray);                  \
  SAME_FIELD(mirror, real, dstPitch);                  \
  SAME_FIELD(mirror, real, WidthInBytes);              \
  SAME_FIELD(mirror, real, Height)

SAME_SIZE(gl_cu_memcpy2d, CUDA_MEMCPY2D_v2);
SAME_COPY_SIDES(gl_cu_memcpy2d, CUDA_MEMCPY2D_v2);
SAME_SIZE(gl_cu_memcpy2d_v1, CUDA_MEMCPY2D_v1);
SAME_COPY_SIDES(gl_cu_memcpy2d_v1, CUDA_MEMCPY2D_v1);

SAME_SIZE(gl_cu_memcpy3d, CUDA_MEMCPY3D_v2);
SAME_COPY_SIDES(gl_cu_memcpy3d, CUDA_MEMCPY3D_v2);
SAME_FIELD(gl_cu_memcpy3d, CUDA_MEMCPY3D_v2, Depth);
SAME_SIZE(gl_cu_memcpy3d_v1, CUDA_MEMCPY3D_v1);
SAME_COPY_SIDES(gl_cu_memcpy3d_v1, CUDA_MEMCPY3D_v1);
SAME_FIELD(gl_cu_memcpy3d_v1, CUDA_MEMCPY3D_v1, Depth);

// The peer copy's struct is read through the 3D mirror: same offsets for
// everything the probes read.
SAME_SIZE(gl_cu_memcpy3d, CUDA_MEMCPY3D_PEER);
static_assert(offsetof(gl_cu_memcpy3d, srcMemoryType) == offsetof(CUDA_MEMCPY3D_PEER, srcMemoryType));
static_assert(offsetof(gl_cu_memcpy3d, dstMemoryType) == offsetof(CUDA_MEMCPY3D_PEER, dstMemoryType));
static_assert(offsetof(gl_cu_memcpy3d, WidthInBytes) == offsetof(CUDA_MEMCPY3D_PEER, WidthInBytes));
static_assert(offsetof(gl_cu_memcpy3d, Height) == offsetof(CUDA_MEMCPY3D_PEER, Height));
static_assert(offsetof(gl_cu_memcpy3d, Depth) == offsetof(CUDA_MEMCPY3D_PEER, Depth));

SAME_SIZE(gl_cu_array_descriptor, CUDA_ARRAY_DESCRIPTOR_v2);
SAME_FIELD(gl_cu_array_descriptor, CUDA_ARRAY_DESCRIPTOR_v2, Width);
SAME_FIELD(gl_cu_array_descriptor, CUDA_ARRAY_DESCRIPTOR_v2, Height);
SAME_FIELD(gl_cu_array_descriptor, CUDA_ARRAY_DESCRIPTOR_v2, Format);
SAME_FIELD(gl_cu_array_descriptor, CUDA_ARRAY_DESCRIPTOR_v2, NumChannels);
SAME_SIZE(gl_cu_array_descriptor_v1, CUDA_ARRAY_DESCRIPTOR_v1);
SAME_FIELD(gl_cu_array_descriptor_v1, CUDA_ARRAY_DESCRIPTOR_v1, Format);
SAME_FIELD(gl_cu_array_descriptor_v1, CUDA_ARRAY_DESCRIPTOR_v1, NumChannels);

SAME_SIZE(gl_cu_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR_v2);
SAME_FIELD(gl_cu_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR_v2, Depth);
SAME_FIELD(gl_cu_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR_v2, Format);
SAME_FIELD(gl_cu_array3d_descriptor, CUDA_ARRAY3D_DESCRIPTOR_v2, NumChannels);
SAME_SIZE(gl_cu_array3d_descriptor_v1, CUDA_ARRAY3D_DESCRIPTOR_v1);
SAME_FIELD(gl_cu_array3d_descriptor_v1, CUDA_ARRAY3D_DESCRIPTOR_v1, Depth);
SAME_FIELD(gl_cu_array3d_descriptor_v1, CUDA_ARRAY3D_DESCRIPTOR_v1, Format);
SAME_FIELD(gl_cu_array3d_descriptor_v1, CUDA_ARRAY3D_DESCRIPTOR_v1, NumChannels);

SAME_SIZE(gl_cu_launch_params, CUDA_LAUNCH_PARAMS);
SAME_FIELD(gl_cu_launch_params, CUDA_LAUNCH_PARAMS, gridDimX);
SAME_FIELD(gl_cu_launch_params, CUDA_LAUNCH_PARAMS, gridDimZ);
SAME_FIELD(gl_cu_launch_params, CUDA_LAUNCH_PARAMS, blockDimX);
SAME_FIELD(gl_cu_launch_params, CUDA_LAUNCH_PARAMS, blockDimZ);
SAME_FIELD(gl_cu_launch_params, CUDA_LAUNCH_PARAMS, hStream);

static_assert(sizeof(CUDA_MEMCPY3D_BATCH_OP) == GL_CU_MEMCPY3D_BATCH_OP_SIZE);
static_assert(offsetof(CUDA_MEMCPY3D_BATCH_OP, extent) == GL_CU_MEMCPY3D_BATCH_OP_EXTENT);
SAME_SIZE(gl_cu_extent3d, CUextent3D);

static_assert(GL_CU_MEMORYTYPE_HOST == CU_MEMORYTYPE_HOST && GL_CU_MEMORYTYPE_DEVICE == CU_MEMORYTYPE_DEVICE &&
              GL_CU_MEMORYTYPE_ARRAY == CU_MEMORYTYPE_ARRAY && GL_CU_MEMORYTYPE_UNIFIED == CU_MEMORYTYPE_UNIFIED);
static_assert(GL_CU_AD_FORMAT_UNSIGNED_INT8 == CU_AD_FORMAT_UNSIGNED_INT8 &&
              GL_CU_AD_FORMAT_UNSIGNED_INT16 == CU_AD_FORMAT_UNSIGNED_INT16 &&
              GL_CU_AD_FORMAT_UNSIGNED_INT32 == CU_AD_FORMAT_UNSIGNED_INT32 &&
              GL_CU_AD_FORMAT_SIGNED_INT8 == CU_AD_FORMAT_SIGNED_INT8 &&
              GL_CU_AD_FORMAT_SIGNED_INT16 == CU_AD_FORMAT_SIGNED_INT16 &&
              GL_CU_AD_FORMAT_SIGNED_INT32 == CU_AD_FORMAT_SIGNED_INT32 && GL_CU_AD_FORMAT_HALF == CU_AD_FORMAT_HALF &&
              GL_CU_AD_FORMAT_FLOAT == CU_AD_FORMAT_FLOAT);
static_assert(CUDA_ERROR_NOT_READY == 600, "the query probes skip this result");
