/*
 * The CUDA driver simulator's second half: entry points the real driver
 * exports that move bytes, launch work, hold memory or report completion
 * beyond the basic forms of cudasim.c, each under every exported name the
 * real libcuda.so.1 (535) has, with the real prototypes:
 *   - copies described by structs: cuMemcpy2D*, cuMemcpy2DUnaligned*,
 *     cuMemcpy3D*, cuMemcpy3DPeer* (the unsuffixed legacy forms take the
 *     32-bit _v1 structs);
 *   - array copies: cuMemcpy{AtoH,HtoA,AtoD,DtoA,AtoA}*;
 *   - memsets: cuMemsetD{8,16,32}*, cuMemsetD2D{8,16,32}*;
 *   - arrays: cuArrayCreate*, cuArray3DCreate*, cuMipmappedArrayCreate and
 *     their destroys (their data is device memory, counted like an allocation);
 *   - legacy launches: cuFuncSetBlockShape, cuLaunch, cuLaunchGrid[Async],
 *     and cuLaunchCooperativeKernelMultiDevice;
 *   - completion by polling: cuStreamQuery*, cuEventQuery;
 *   - cuGetExportTable (the simulator has no tables to give).
 * As in cudasim.c, exported entry points never call one another: each goes
 * to the hidden helpers (cudasim_internal.h), so a uprobe on one fires once
 * per application call. Variants end in PTDS_MARK so no two bodies are the
 * same code.
 */
#define _GNU_SOURCE
#define CUDASIM_BUILDING_LIBRARY 1
#include "cudasim_internal.h"

#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default"), noinline, used))
#define PTDS_MARK() __asm__ volatile("" ::: "memory")
#define ADDR(p) ((unsigned long long)(uintptr_t)(p))
#define DST 1
#define SRC 2

/* ----------------------------------------------------- struct copies */
/* One side of a 2D/3D copy names memory of its type. */
static int side_ok(CUmemorytype type, const void *host, unsigned long long device, CUarray array)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: return host != NULL;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: return device != 0;
    case CU_MEMORYTYPE_ARRAY: return array != NULL;
    }
    return 0;
}

/* Checks what the driver checks first (initialised, a context, the stream),
 * then the two sides. */
static CUresult struct_copy(int sides_ok, int has_stream, CUstream hStream)
{
    return sim_copy(sides_ok ? 1 : 0, 1, DST, has_stream, hStream);
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, int has_stream, CUstream s)
{
    int ok = c && side_ok(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray) &&
             side_ok(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray);
    return struct_copy(ok, has_stream, s);
}

static CUresult copy2d_v1(const CUDA_MEMCPY2D_v1 *c, int has_stream, CUstream s)
{
    int ok = c && side_ok(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray) &&
             side_ok(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray);
    return struct_copy(ok, has_stream, s);
}

static CUresult copy3d(const CUDA_MEMCPY3D *c, int has_stream, CUstream s)
{
    int ok = c && side_ok(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray) &&
             side_ok(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray);
    return struct_copy(ok, has_stream, s);
}

static CUresult copy3d_v1(const CUDA_MEMCPY3D_v1 *c, int has_stream, CUstream s)
{
    int ok = c && side_ok(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray) &&
             side_ok(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray);
    return struct_copy(ok, has_stream, s);
}

static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *c, int has_stream, CUstream s)
{
    int ok = c && side_ok(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray) &&
             side_ok(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray);
    if (!ok)
        return struct_copy(0, has_stream, s);
    return sim_copy_peer(c->dstContext, c->srcContext, has_stream, s);
}

EXPORT CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1 *pCopy) { return copy2d_v1(pCopy, 0, NULL); }
EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) { return copy2d(pCopy, 0, NULL); }
EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    CUresult r = copy2d(pCopy, 0, NULL);
    PTDS_MARK();
    return r;
}
EXPORT CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream)
{
    return copy2d_v1(pCopy, 1, hStream);
}
EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream) { return copy2d(pCopy, 1, hStream); }
EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    CUresult r = copy2d(pCopy, 1, hStream);
    PTDS_MARK();
    return r;
}
/* Unaligned: the same copy without the driver's alignment requirements. */
EXPORT CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1 *pCopy)
{
    CUresult r = copy2d_v1(pCopy, 0, NULL);
    PTDS_MARK();
    return r;
}
EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    CUresult r = copy2d(pCopy, 0, NULL);
    __asm__ volatile("" ::: "memory", "cc");
    return r;
}
EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    CUresult r = copy2d(pCopy, 0, NULL);
    __asm__ volatile("nop" ::: "memory");
    return r;
}
EXPORT CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1 *pCopy) { return copy3d_v1(pCopy, 0, NULL); }
EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) { return copy3d(pCopy, 0, NULL); }
EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    CUresult r = copy3d(pCopy, 0, NULL);
    PTDS_MARK();
    return r;
}
EXPORT CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream)
{
    return copy3d_v1(pCopy, 1, hStream);
}
EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream) { return copy3d(pCopy, 1, hStream); }
EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    CUresult r = copy3d(pCopy, 1, hStream);
    PTDS_MARK();
    return r;
}
EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy) { return copy3d_peer(pCopy, 0, NULL); }
EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
    CUresult r = copy3d_peer(pCopy, 0, NULL);
    PTDS_MARK();
    return r;
}
EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return copy3d_peer(pCopy, 1, hStream);
}
EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    CUresult r = copy3d_peer(pCopy, 1, hStream);
    PTDS_MARK();
    return r;
}

/* ------------------------------------------------------ array copies */
/* Arrays are device memory: their handle stands for the address. The
 * legacy forms take 32-bit offsets and counts (and device pointers). */
#define ARRAY_COPY_FORMS(name, params, params_v1, dst, src, mask, unused)                 \
    EXPORT CUresult name params_v1                                                        \
    {                                                                                     \
        (void)(unused);                                                                   \
        return sim_copy(dst, src, mask, 0, NULL);                                         \
    }                                                                                     \
    EXPORT CUresult name##_v2 params                                                      \
    {                                                                                     \
        (void)(unused);                                                                   \
        return sim_copy(dst, src, mask, 0, NULL);                                         \
    }                                                                                     \
    EXPORT CUresult name##_v2_ptds params                                                 \
    {                                                                                     \
        (void)(unused);                                                                   \
        CUresult r = sim_copy(dst, src, mask, 0, NULL);                                   \
        PTDS_MARK();                                                                      \
        return r;                                                                         \
    }
#define ARRAY_COPY_ASYNC_FORMS(name, params, params_v1, dst, src, mask, unused)           \
    EXPORT CUresult name params_v1                                                        \
    {                                                                                     \
        (void)(unused);                                                                   \
        return sim_copy(dst, src, mask, 1, hStream);                                      \
    }                                                                                     \
    EXPORT CUresult name##_v2 params                                                      \
    {                                                                                     \
        (void)(unused);                                                                   \
        return sim_copy(dst, src, mask, 1, hStream);                                      \
    }                                                                                     \
    EXPORT CUresult name##_v2_ptsz params                                                 \
    {                                                                                     \
        (void)(unused);                                                                   \
        CUresult r = sim_copy(dst, src, mask, 1, hStream);                                \
        PTDS_MARK();                                                                      \
        return r;                                                                         \
    }

ARRAY_COPY_FORMS(cuMemcpyAtoH, (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount),
                 (void *dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount),
                 ADDR(dstHost), ADDR(srcArray), SRC, srcOffset + ByteCount)
ARRAY_COPY_ASYNC_FORMS(cuMemcpyAtoHAsync,
                       (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream),
                       (void *dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount,
                        CUstream hStream),
                       ADDR(dstHost), ADDR(srcArray), SRC, srcOffset + ByteCount)
ARRAY_COPY_FORMS(cuMemcpyHtoA, (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount),
                 (CUarray dstArray, unsigned int dstOffset, const void *srcHost, unsigned int ByteCount),
                 ADDR(dstArray), ADDR(srcHost), DST, dstOffset + ByteCount)
ARRAY_COPY_ASYNC_FORMS(cuMemcpyHtoAAsync,
                       (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream),
                       (CUarray dstArray, unsigned int dstOffset, const void *srcHost, unsigned int ByteCount,
                        CUstream hStream),
                       ADDR(dstArray), ADDR(srcHost), DST, dstOffset + ByteCount)
ARRAY_COPY_FORMS(cuMemcpyAtoD, (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount),
                 (CUdeviceptr_v1 dstDevice, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount),
                 dstDevice, ADDR(srcArray), DST | SRC, srcOffset + ByteCount)
ARRAY_COPY_FORMS(cuMemcpyDtoA, (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount),
                 (CUarray dstArray, unsigned int dstOffset, CUdeviceptr_v1 srcDevice, unsigned int ByteCount),
                 ADDR(dstArray), srcDevice, DST | SRC, dstOffset + ByteCount)
ARRAY_COPY_FORMS(cuMemcpyAtoA,
                 (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount),
                 (CUarray dstArray, unsigned int dstOffset, CUarray srcArray, unsigned int srcOffset,
                  unsigned int ByteCount),
                 ADDR(dstArray), ADDR(srcArray), DST | SRC, dstOffset + srcOffset + ByteCount)

/* ----------------------------------------------------------- memsets */
/* (dst, value, count[, stream]) and (dst, pitch, value, width, height[, stream]). */
#define MEMSET_FORMS(name, value_t)                                                                  \
    EXPORT CUresult name(CUdeviceptr_v1 dstDevice, value_t v, unsigned int N)                        \
    {                                                                                                \
        (void)v, (void)N;                                                                            \
        return sim_memset(dstDevice, 0, NULL);                                                       \
    }                                                                                                \
    EXPORT CUresult name##_v2(CUdeviceptr dstDevice, value_t v, size_t N)                            \
    {                                                                                                \
        (void)v, (void)N;                                                                            \
        return sim_memset(dstDevice, 0, NULL);                                                       \
    }                                                                                                \
    EXPORT CUresult name##_v2_ptds(CUdeviceptr dstDevice, value_t v, size_t N)                       \
    {                                                                                                \
        (void)v, (void)N;                                                                            \
        CUresult r = sim_memset(dstDevice, 0, NULL);                                                 \
        PTDS_MARK();                                                                                 \
        return r;                                                                                    \
    }                                                                                                \
    EXPORT CUresult name##Async(CUdeviceptr dstDevice, value_t v, size_t N, CUstream hStream)        \
    {                                                                                                \
        (void)v, (void)N;                                                                            \
        return sim_memset(dstDevice, 1, hStream);                                                    \
    }                                                                                                \
    EXPORT CUresult name##Async_ptsz(CUdeviceptr dstDevice, value_t v, size_t N, CUstream hStream)   \
    {                                                                                                \
        (void)v, (void)N;                                                                            \
        CUresult r = sim_memset(dstDevice, 1, hStream);                                              \
        PTDS_MARK();                                                                                 \
        return r;                                                                                    \
    }
#define MEMSET2D_FORMS(name, value_t)                                                                \
    EXPORT CUresult name(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, value_t v, unsigned int W, \
                         unsigned int H)                                                             \
    {                                                                                                \
        (void)dstPitch, (void)v, (void)W, (void)H;                                                   \
        return sim_memset(dstDevice, 0, NULL);                                                       \
    }                                                                                                \
    EXPORT CUresult name##_v2(CUdeviceptr dstDevice, size_t dstPitch, value_t v, size_t W, size_t H) \
    {                                                                                                \
        (void)dstPitch, (void)v, (void)W, (void)H;                                                   \
        return sim_memset(dstDevice, 0, NULL);                                                       \
    }                                                                                                \
    EXPORT CUresult name##_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, value_t v, size_t W,      \
                                   size_t H)                                                         \
    {                                                                                                \
        (void)dstPitch, (void)v, (void)W, (void)H;                                                   \
        CUresult r = sim_memset(dstDevice, 0, NULL);                                                 \
        PTDS_MARK();                                                                                 \
        return r;                                                                                    \
    }                                                                                                \
    EXPORT CUresult name##Async(CUdeviceptr dstDevice, size_t dstPitch, value_t v, size_t W,         \
                                size_t H, CUstream hStream)                                          \
    {                                                                                                \
        (void)dstPitch, (void)v, (void)W, (void)H;                                                   \
        return sim_memset(dstDevice, 1, hStream);                                                    \
    }                                                                                                \
    EXPORT CUresult name##Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, value_t v, size_t W,    \
                                     size_t H, CUstream hStream)                                     \
    {                                                                                                \
        (void)dstPitch, (void)v, (void)W, (void)H;                                                   \
        CUresult r = sim_memset(dstDevice, 1, hStream);                                              \
        PTDS_MARK();                                                                                 \
        return r;                                                                                    \
    }

MEMSET_FORMS(cuMemsetD8, unsigned char)
MEMSET_FORMS(cuMemsetD16, unsigned short)
MEMSET_FORMS(cuMemsetD32, unsigned int)
MEMSET2D_FORMS(cuMemsetD2D8, unsigned char)
MEMSET2D_FORMS(cuMemsetD2D16, unsigned short)
MEMSET2D_FORMS(cuMemsetD2D32, unsigned int)

/* ------------------------------------------------------------ arrays */
static unsigned long long format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    }
    return 0;
}

static unsigned long long at_least_1(unsigned long long v) { return v ? v : 1; }

/* An array's data bytes: width x height x depth (0 meaning 1) x channels x
 * element size, summed over `levels` halving mipmap levels. 0: invalid. */
static unsigned long long array_bytes(unsigned long long w, unsigned long long h, unsigned long long d,
                                      CUarray_format format, unsigned channels, unsigned levels)
{
    unsigned long long elem = format_bytes(format);
    if (!elem || w == 0 || (channels != 1 && channels != 2 && channels != 4) || levels == 0 || levels > 16)
        return 0;
    elem *= channels;
    h = at_least_1(h), d = at_least_1(d);
    unsigned long long total = 0;
    for (unsigned l = 0; l < levels; l++) {
        total += w * h * d * elem;
        w = at_least_1(w >> 1), h = at_least_1(h >> 1), d = at_least_1(d >> 1);
    }
    return total;
}

static CUresult array_create(void **out, unsigned long long bytes)
{
    unsigned long long addr = 0;
    /* 0 bytes (a bad descriptor) fails in sim_array_create with INVALID_VALUE. */
    CUresult r = sim_array_create(out ? &addr : NULL, bytes);
    if (r == CUDA_SUCCESS)
        *out = (void *)(uintptr_t)addr;
    return r;
}

EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    const CUDA_ARRAY_DESCRIPTOR_v1 *a = pAllocateArray;
    return array_create((void **)pHandle, a ? array_bytes(a->Width, a->Height, 1, a->Format, a->NumChannels, 1) : 0);
}
EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY_DESCRIPTOR *a = pAllocateArray;
    return array_create((void **)pHandle, a ? array_bytes(a->Width, a->Height, 1, a->Format, a->NumChannels, 1) : 0);
}
EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    const CUDA_ARRAY3D_DESCRIPTOR_v1 *a = pAllocateArray;
    return array_create((void **)pHandle,
                        a ? array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels, 1) : 0);
}
EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    const CUDA_ARRAY3D_DESCRIPTOR *a = pAllocateArray;
    return array_create((void **)pHandle,
                        a ? array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels, 1) : 0);
}
EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                       unsigned int numMipmapLevels)
{
    const CUDA_ARRAY3D_DESCRIPTOR *a = pMipmappedArrayDesc;
    return array_create((void **)pHandle, a ? array_bytes(a->Width, a->Height, a->Depth, a->Format,
                                                          a->NumChannels, numMipmapLevels)
                                            : 0);
}
EXPORT CUresult cuArrayDestroy(CUarray hArray) { return sim_array_destroy(ADDR(hArray)); }
EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    CUresult r = sim_array_destroy(ADDR(hMipmappedArray));
    PTDS_MARK();
    return r;
}

/* -------------------------------------------------- legacy launches */
EXPORT CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z) { return sim_set_block_shape(hfunc, x, y, z); }
EXPORT CUresult cuLaunch(CUfunction f) { return sim_launch_legacy(f, 1, 1, NULL); }
EXPORT CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height)
{
    return sim_launch_legacy(f, grid_width, grid_height, NULL);
}
EXPORT CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream)
{
    return sim_launch_legacy(f, grid_width, grid_height, hStream);
}

/* One launch per entry, each on its own stream (here: all devices are one
 * simulator, so each entry's launch is checked and run in turn). */
EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList, unsigned int numDevices,
                                                     unsigned int flags)
{
    (void)flags;
    if (!launchParamsList || numDevices == 0)
        return sim_launch(NULL, 0, 0, 0, 0, 0, 0, NULL); /* the usual checks, then an error */
    for (unsigned i = 0; i < numDevices; i++) {
        const CUDA_LAUNCH_PARAMS *p = &launchParamsList[i];
        CUresult r = sim_launch(p->function, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                                p->blockDimZ, p->hStream);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* ----------------------------------------------------------- queries */
EXPORT CUresult cuStreamQuery(CUstream hStream) { return sim_stream_query(hStream); }
EXPORT CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    CUresult r = sim_stream_query(hStream);
    PTDS_MARK();
    return r;
}
EXPORT CUresult cuEventQuery(CUevent hEvent) { return sim_event_query(hEvent); }

/* ------------------------------------------------------ export tables */
/* The real driver hands a runtime undocumented tables by id; the simulator
 * has none, so every id is refused (and counted by the agent all the same). */
EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    if (ppExportTable)
        *ppExportTable = NULL;
    (void)pExportTableId;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------ cuGetProcAddress */
struct family_proc {
    const char *name;
    void *fn;
};
#define P(fn) {#fn, (void *)&fn}
#define P3(fn) P(fn), P(fn##_v2), P(fn##_v2_ptds)
#define P3A(fn) P(fn), P(fn##_v2), P(fn##_v2_ptsz)
#define PMEMSET(fn) P(fn), P(fn##_v2), P(fn##_v2_ptds), P(fn##Async), P(fn##Async_ptsz)
static const struct family_proc k_family_procs[] = {
    P3(cuMemcpy2D), P3A(cuMemcpy2DAsync), P3(cuMemcpy2DUnaligned), P3(cuMemcpy3D), P3A(cuMemcpy3DAsync),
    P(cuMemcpy3DPeer), P(cuMemcpy3DPeer_ptds), P(cuMemcpy3DPeerAsync), P(cuMemcpy3DPeerAsync_ptsz),
    P3(cuMemcpyAtoH), P3A(cuMemcpyAtoHAsync), P3(cuMemcpyHtoA), P3A(cuMemcpyHtoAAsync), P3(cuMemcpyAtoD),
    P3(cuMemcpyDtoA), P3(cuMemcpyAtoA),
    PMEMSET(cuMemsetD8), PMEMSET(cuMemsetD16), PMEMSET(cuMemsetD32), PMEMSET(cuMemsetD2D8),
    PMEMSET(cuMemsetD2D16), PMEMSET(cuMemsetD2D32),
    P(cuArrayCreate), P(cuArrayCreate_v2), P(cuArray3DCreate), P(cuArray3DCreate_v2), P(cuMipmappedArrayCreate),
    P(cuArrayDestroy), P(cuMipmappedArrayDestroy),
    P(cuFuncSetBlockShape), P(cuLaunch), P(cuLaunchGrid), P(cuLaunchGridAsync),
    P(cuLaunchCooperativeKernelMultiDevice),
    P(cuStreamQuery), P(cuStreamQuery_ptsz), P(cuEventQuery), P(cuGetExportTable),
};
#undef P

SIM_HIDDEN void *sim_find_family_proc(const char *name)
{
    for (size_t i = 0; i < sizeof k_family_procs / sizeof k_family_procs[0]; i++)
        if (strcmp(k_family_procs[i].name, name) == 0)
            return k_family_procs[i].fn;
    return NULL;
}
