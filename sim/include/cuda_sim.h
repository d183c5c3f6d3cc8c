/*
 * cuda_sim.h -- gpuledger CUDA driver simulator, no GPU behind it.
 *
 * Declares the subset of the CUDA driver API (cuda.h) that the gpuledger
 * stand-in library (build/sim/lib/libcuda.so.1) exports.  Types, constant
 * values, struct layouts and function signatures follow the real CUDA driver
 * API (64-bit), so a uprobe-based tool reads arguments from the same
 * registers / offsets it would with NVIDIA's libcuda.so.1.
 *
 * Unlike the real cuda.h, this header does NOT #define cuMemAlloc ->
 * cuMemAlloc_v2 etc.: every entry point is declared under its exact exported
 * name so tests can call the legacy, _v2, _ptds and _ptsz forms explicitly.
 *
 * Nothing here talks to hardware: allocations are fake addresses, copies copy
 * nothing, kernels only advance a simulated per-stream clock.
 */
#ifndef GPULEDGER_CUDA_SIM_H
#define GPULEDGER_CUDA_SIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CUDASIM_BUILDING_LIBRARY)
#define CUDASIM_API __attribute__((visibility("default")))
#else
#define CUDASIM_API
#endif

/* Driver version the simulator reports (CUDA 12.4). */
#define CUDASIM_DRIVER_VERSION 12040

/* ---------------------------------------------------------------- results */
typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT = 202,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

/* ------------------------------------------------------------ basic types */
typedef uint64_t cuuint64_t;
typedef uint32_t cuuint32_t;
typedef int CUdevice;
typedef unsigned int CUdeviceptr_v1;        /* legacy 32-bit device pointer */
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_PITCH = 11,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    CU_DEVICE_ATTRIBUTE_MAX = 140
} CUdevice_attribute;

/* --------------------------------------------------------------- contexts */
typedef enum CUexecAffinityType_enum {
    CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0,
    CU_EXEC_AFFINITY_TYPE_MAX
} CUexecAffinityType;

typedef struct CUexecAffinitySmCount_st {
    unsigned int val;
} CUexecAffinitySmCount;

typedef struct CUexecAffinityParam_st {
    CUexecAffinityType type;
    union {
        CUexecAffinitySmCount smCount;
    } param;
} CUexecAffinityParam;

typedef struct CUctxCigParam_st {
    int sharedDataType;
    void *sharedData;
} CUctxCigParam;

typedef struct CUctxCreateParams_st {
    CUexecAffinityParam *execAffinityParams;
    int numExecAffinityParams;
    CUctxCigParam *cigParams;
} CUctxCreateParams;

/* --------------------------------------------------------------- launches */
typedef int CUlaunchAttributeID;

typedef union CUlaunchAttributeValue_union {
    char pad[64];
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
    unsigned int gridDimX;
    unsigned int gridDimY;
    unsigned int gridDimZ;
    unsigned int blockDimX;
    unsigned int blockDimY;
    unsigned int blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

/* ------------------------------------------------------ memory management */
#define CU_MEM_ATTACH_GLOBAL 0x1
#define CU_MEM_ATTACH_HOST 0x2

typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1
} CUmemAllocationType;

typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_NONE = 0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
} CUmemAllocationHandleType;

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0,
    CU_MEM_LOCATION_TYPE_DEVICE = 1
} CUmemLocationType;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;
} CUmemLocation;

/* Same layout as the real CUmemAllocationProp (32 bytes on x86-64). */
typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

/* ---------------------------------------------------------- proc address */
typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM (1 << 0)
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (1 << 1)

/* ============================================================== entry points */
/* Simulator-only extras (not part of the CUDA driver API). */
CUDASIM_API const char *cudasimVersionString(void);
/* Bytes currently allocated (all devices, all allocation kinds). */
CUDASIM_API unsigned long long cudasimLiveBytes(void);

/* Initialization / version / errors */
CUDASIM_API CUresult cuInit(unsigned int Flags);
CUDASIM_API CUresult cuDriverGetVersion(int *driverVersion);
CUDASIM_API CUresult cuGetErrorName(CUresult error, const char **pStr);
CUDASIM_API CUresult cuGetErrorString(CUresult error, const char **pStr);
CUDASIM_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags);
CUDASIM_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus);

/* Devices */
CUDASIM_API CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUDASIM_API CUresult cuDeviceGetCount(int *count);
CUDASIM_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUDASIM_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUDASIM_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUDASIM_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUDASIM_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUDASIM_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);

/* Contexts */
CUDASIM_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUDASIM_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                    int numParams, unsigned int flags, CUdevice dev);
CUDASIM_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                    unsigned int flags, CUdevice dev);
CUDASIM_API CUresult cuCtxDestroy_v2(CUcontext ctx);
CUDASIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUDASIM_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUDASIM_API CUresult cuCtxSetCurrent(CUcontext ctx);
CUDASIM_API CUresult cuCtxGetCurrent(CUcontext *pctx);
CUDASIM_API CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUDASIM_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx);
CUDASIM_API CUresult cuCtxGetDevice(CUdevice *device);
CUDASIM_API CUresult cuCtxSynchronize(void);

/* Streams and events */
CUDASIM_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUDASIM_API CUresult cuStreamDestroy_v2(CUstream hStream);
CUDASIM_API CUresult cuStreamSynchronize(CUstream hStream);
CUDASIM_API CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUDASIM_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
CUDASIM_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUDASIM_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUDASIM_API CUresult cuEventDestroy_v2(CUevent hEvent);
CUDASIM_API CUresult cuEventSynchronize(CUevent hEvent);

/* Modules and launches */
CUDASIM_API CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUDASIM_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUDASIM_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra);
CUDASIM_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                         unsigned int gridDimY, unsigned int gridDimZ,
                                         unsigned int blockDimX, unsigned int blockDimY,
                                         unsigned int blockDimZ, unsigned int sharedMemBytes,
                                         CUstream hStream, void **kernelParams, void **extra);
CUDASIM_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra);
CUDASIM_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                           void **kernelParams, void **extra);
CUDASIM_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUDASIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

/* Allocation */
CUDASIM_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize); /* legacy */
CUDASIM_API CUresult cuMemFree(CUdeviceptr_v1 dptr);                          /* legacy */
CUDASIM_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUDASIM_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUDASIM_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUDASIM_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUDASIM_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                             CUmemoryPool pool, CUstream hStream);
CUDASIM_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                        size_t Height, unsigned int ElementSizeBytes);
CUDASIM_API CUresult cuMemFree_v2(CUdeviceptr dptr);
CUDASIM_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUDASIM_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUDASIM_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags);
CUDASIM_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle);

/* Copies */
CUDASIM_API CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost,
                                  unsigned int ByteCount); /* legacy */
CUDASIM_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                     size_t ByteCount);
CUDASIM_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                          CUstream hStream);
CUDASIM_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                          size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t ByteCount);
CUDASIM_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                          size_t ByteCount);
CUDASIM_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                               size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
                                               size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                               size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                   CUstream hStream);
CUDASIM_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                        CUstream hStream);
CUDASIM_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                       CUdeviceptr srcDevice, CUcontext srcContext,
                                       size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                       CUdeviceptr srcDevice, CUcontext srcContext,
                                       size_t ByteCount);
CUDASIM_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                            CUdeviceptr srcDevice, CUcontext srcContext,
                                            size_t ByteCount, CUstream hStream);

#ifdef __cplusplus
}
#endif

#endif /* GPULEDGER_CUDA_SIM_H */
