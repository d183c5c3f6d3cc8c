/*
 * cuda_sim_api.h -- the entry points the CUDA driver simulator exports, each
 * declared under its exact exported name with the real C prototype (legacy
 * unsuffixed forms with their 32-bit types). Included by cuda_sim.h after the
 * types. Kept apart so a test can compile these declarations beside NVIDIA's
 * real cuda.h: a prototype that differs from the real one is a build error
 * (tests/probes/sim_prototypes_check.c).
 */
#ifndef GPULEDGER_CUDA_SIM_API_H
#define GPULEDGER_CUDA_SIM_API_H

#ifdef __cplusplus
extern "C" {
#endif

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
CUDASIM_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
CUDASIM_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags);
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


/* Legacy (32-bit) and per-thread forms of the families above */
CUDASIM_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUDASIM_API CUresult cuCtxDestroy(CUcontext ctx);
CUDASIM_API CUresult cuCtxPushCurrent(CUcontext ctx);
CUDASIM_API CUresult cuCtxPopCurrent(CUcontext *pctx);
CUDASIM_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams);
CUDASIM_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams);
CUDASIM_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUDASIM_API CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes, unsigned int Height, unsigned int ElementSizeBytes);
CUDASIM_API CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount);
CUDASIM_API CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount);
CUDASIM_API CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream);

/* Copies described by structs (sim/libcuda/cudasim_families.c) */
CUDASIM_API CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1 *pCopy);
CUDASIM_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy);
CUDASIM_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy);
CUDASIM_API CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream);
CUDASIM_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream);
CUDASIM_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream);
CUDASIM_API CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1 *pCopy);
CUDASIM_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy);
CUDASIM_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy);
CUDASIM_API CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1 *pCopy);
CUDASIM_API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy);
CUDASIM_API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy);
CUDASIM_API CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream);
CUDASIM_API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream);
CUDASIM_API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream);
CUDASIM_API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy);
CUDASIM_API CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy);
CUDASIM_API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream);
CUDASIM_API CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream);

/* Array copies */
CUDASIM_API CUresult cuMemcpyAtoH(void *dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount);
CUDASIM_API CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyAtoH_v2_ptds(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyAtoHAsync(void *dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyHtoA(CUarray dstArray, unsigned int dstOffset, const void *srcHost, unsigned int ByteCount);
CUDASIM_API CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyHtoAAsync(CUarray dstArray, unsigned int dstOffset, const void *srcHost, unsigned int ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream);
CUDASIM_API CUresult cuMemcpyAtoD(CUdeviceptr_v1 dstDevice, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount);
CUDASIM_API CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyDtoA(CUarray dstArray, unsigned int dstOffset, CUdeviceptr_v1 srcDevice, unsigned int ByteCount);
CUDASIM_API CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyAtoA(CUarray dstArray, unsigned int dstOffset, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount);
CUDASIM_API CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUDASIM_API CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount);

/* Memsets */
CUDASIM_API CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N);
CUDASIM_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUDASIM_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUDASIM_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUDASIM_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUDASIM_API CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N);
CUDASIM_API CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUDASIM_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUDASIM_API CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
CUDASIM_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
CUDASIM_API CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N);
CUDASIM_API CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUDASIM_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUDASIM_API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUDASIM_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUDASIM_API CUresult cuMemsetD2D8(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc, unsigned int Width, unsigned int Height);
CUDASIM_API CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height);
CUDASIM_API CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height);
CUDASIM_API CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream);
CUDASIM_API CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream);
CUDASIM_API CUresult cuMemsetD2D16(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us, unsigned int Width, unsigned int Height);
CUDASIM_API CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height);
CUDASIM_API CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height);
CUDASIM_API CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream);
CUDASIM_API CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream);
CUDASIM_API CUresult cuMemsetD2D32(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui, unsigned int Width, unsigned int Height);
CUDASIM_API CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height);
CUDASIM_API CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height);
CUDASIM_API CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream);
CUDASIM_API CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream);

/* Arrays */
CUDASIM_API CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray);
CUDASIM_API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray);
CUDASIM_API CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray);
CUDASIM_API CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray);
CUDASIM_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc, unsigned int numMipmapLevels);
CUDASIM_API CUresult cuArrayDestroy(CUarray hArray);
CUDASIM_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray);

/* Legacy and multi-device launches */
CUDASIM_API CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z);
CUDASIM_API CUresult cuLaunch(CUfunction f);
CUDASIM_API CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height);
CUDASIM_API CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream);
CUDASIM_API CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList, unsigned int numDevices, unsigned int flags);

/* Completion by polling; export tables */
CUDASIM_API CUresult cuStreamQuery(CUstream hStream);
CUDASIM_API CUresult cuStreamQuery_ptsz(CUstream hStream);
CUDASIM_API CUresult cuEventQuery(CUevent hEvent);
CUDASIM_API CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId);

#ifdef __cplusplus
}
#endif

#endif /* GPULEDGER_CUDA_SIM_API_H */
