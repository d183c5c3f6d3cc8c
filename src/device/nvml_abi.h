#pragma once
// The slice of NVIDIA's NVML C ABI (nvml.h) that gpuledger uses, declared here
// so the agent builds on machines without NVIDIA's headers: the agent dlopen()s
// the real libnvidia-ml.so.1 at run time and calls through these types. Also
// used by the project's NVML simulator (sim/nvml), which implements the same
// ABI under the same exported names.
//
// The declarations live in a namespace so a translation unit can hold them next
// to the real nvml.h: tests/device/nvml_abi_check_test.cpp does, and checks at
// compile time, from the lists below, that every return code and constant has
// nvml.h's value, every struct its size, field offsets and field types, and
// every function pointer type the prototype of the function it is looked up as.
// Add a type, constant or function here through its list, or it is not checked.
#include <cstdint>

namespace gpuledger::nvml_abi {

// X(name, value): nvmlReturn_t, as nvml.h (CUDA 11.8, driver 535) numbers it.
#define GPULEDGER_NVML_RETURN_CODES(X)      \
  X(NVML_SUCCESS, 0)                        \
  X(NVML_ERROR_UNINITIALIZED, 1)            \
  X(NVML_ERROR_INVALID_ARGUMENT, 2)         \
  X(NVML_ERROR_NOT_SUPPORTED, 3)            \
  X(NVML_ERROR_NO_PERMISSION, 4)            \
  X(NVML_ERROR_ALREADY_INITIALIZED, 5)      \
  X(NVML_ERROR_NOT_FOUND, 6)                \
  X(NVML_ERROR_INSUFFICIENT_SIZE, 7)        \
  X(NVML_ERROR_INSUFFICIENT_POWER, 8)       \
  X(NVML_ERROR_DRIVER_NOT_LOADED, 9)        \
  X(NVML_ERROR_TIMEOUT, 10)                 \
  X(NVML_ERROR_IRQ_ISSUE, 11)               \
  X(NVML_ERROR_LIBRARY_NOT_FOUND, 12)       \
  X(NVML_ERROR_FUNCTION_NOT_FOUND, 13)      \
  X(NVML_ERROR_CORRUPTED_INFOROM, 14)       \
  X(NVML_ERROR_GPU_IS_LOST, 15)             \
  X(NVML_ERROR_RESET_REQUIRED, 16)          \
  X(NVML_ERROR_OPERATING_SYSTEM, 17)        \
  X(NVML_ERROR_LIB_RM_VERSION_MISMATCH, 18) \
  X(NVML_ERROR_IN_USE, 19)                  \
  X(NVML_ERROR_MEMORY, 20)                  \
  X(NVML_ERROR_NO_DATA, 21)                 \
  X(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, 22)  \
  X(NVML_ERROR_INSUFFICIENT_RESOURCES, 23)  \
  X(NVML_ERROR_FREQ_NOT_SUPPORTED, 24)      \
  X(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 25) \
  X(NVML_ERROR_UNKNOWN, 999)

#define GPULEDGER_NVML_ENUMERATOR(name, value) name = value,
typedef enum nvmlReturn_enum { GPULEDGER_NVML_RETURN_CODES(GPULEDGER_NVML_ENUMERATOR) } nvmlReturn_t;
#undef GPULEDGER_NVML_ENUMERATOR

// The opaque handle type of nvml.h (the simulator defines the struct).
typedef struct nvmlDevice_st* nvmlDevice_t;

// X(name here, nvml.h's macro, value). Named apart from the macros so both can
// be in one translation unit.
#define GPULEDGER_NVML_CONSTANTS(X)                                                 \
  X(kDeviceUuidV2BufferSize, NVML_DEVICE_UUID_V2_BUFFER_SIZE, 96)                   \
  X(kDeviceNameV2BufferSize, NVML_DEVICE_NAME_V2_BUFFER_SIZE, 96)                   \
  X(kDevicePciBusIdBufferSize, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, 32)              \
  X(kDevicePciBusIdBufferV2Size, NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, 16)         \
  X(kDeviceMigDisable, NVML_DEVICE_MIG_DISABLE, 0x0)                                \
  X(kDeviceMigEnable, NVML_DEVICE_MIG_ENABLE, 0x1)                                  \
  /* usedGpuMemory when the driver cannot tell (e.g. no permission, WDDM) */        \
  X(kValueNotAvailable, NVML_VALUE_NOT_AVAILABLE, (-1))

#define GPULEDGER_NVML_CONSTANT(name, real, value) inline constexpr auto name = value;
GPULEDGER_NVML_CONSTANTS(GPULEDGER_NVML_CONSTANT)
#undef GPULEDGER_NVML_CONSTANT

typedef struct nvmlPciInfo_st {
  char busIdLegacy[kDevicePciBusIdBufferV2Size];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[kDevicePciBusIdBufferSize];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// nvmlDeviceGetMemoryInfo (v1): total = free + used, reserved memory in used.
typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// nvmlDeviceGetMemoryInfo_v2: the driver's reservation apart.
typedef struct nvmlMemory_v2_st {
  unsigned int version;  // kMemoryV2Version
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

// NVML_STRUCT_VERSION(Memory, 2): the size with the version in the top byte.
inline constexpr unsigned int kMemoryV2Version = static_cast<unsigned int>(sizeof(nvmlMemory_v2_t) | (2u << 24));

// What the _v3 process queries fill (nvml.h declares it apart from, and laid
// out as, nvmlProcessInfo_v2_t).
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;      // 0xFFFFFFFF when not a MIG device
  unsigned int computeInstanceId;  // 0xFFFFFFFF when not a MIG device
} nvmlProcessInfo_t;

typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

// X(struct, fields...): every struct above with all its fields, in order.
#define GPULEDGER_NVML_STRUCTS(X)                                                                   \
  X(nvmlPciInfo_t, busIdLegacy, domain, bus, device, pciDeviceId, pciSubSystemId, busId)            \
  X(nvmlUtilization_t, gpu, memory)                                                                 \
  X(nvmlMemory_t, total, free, used)                                                                \
  X(nvmlMemory_v2_t, version, total, reserved, free, used)                                          \
  X(nvmlProcessInfo_t, pid, usedGpuMemory, gpuInstanceId, computeInstanceId)                        \
  X(nvmlProcessUtilizationSample_t, pid, timeStamp, smUtil, memUtil, encUtil, decUtil)

// X(function, return type, parameters): every entry point the client looks up
// by name (dlsym) and the simulator exports; NAME_fn is its pointer type.
#define GPULEDGER_NVML_FUNCTIONS(X)                                                                              \
  X(nvmlInit_v2, nvmlReturn_t, (void))                                                                           \
  X(nvmlShutdown, nvmlReturn_t, (void))                                                                          \
  X(nvmlErrorString, const char*, (nvmlReturn_t result))                                                         \
  X(nvmlSystemGetDriverVersion, nvmlReturn_t, (char* version, unsigned int length))                              \
  X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int* deviceCount))                                            \
  X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t* device))                     \
  X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char* uuid, unsigned int length))                     \
  X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char* name, unsigned int length))                     \
  X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t * pci))                           \
  X(nvmlDeviceGetMinorNumber, nvmlReturn_t, (nvmlDevice_t device, unsigned int* minorNumber))                    \
  X(nvmlDeviceGetMigMode, nvmlReturn_t,                                                                          \
    (nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode))                                 \
  X(nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t device, nvmlUtilization_t * utilization))         \
  X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t * memory))                         \
  X(nvmlDeviceGetMemoryInfo_v2, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_v2_t * memory))                   \
  /* milliwatts */                                                                                               \
  X(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t device, unsigned int* power))                           \
  /* millijoules since the driver was last loaded (Volta and later) */                                           \
  X(nvmlDeviceGetTotalEnergyConsumption, nvmlReturn_t, (nvmlDevice_t device, unsigned long long* energy))        \
  X(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                                                       \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos))                                    \
  X(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlReturn_t,                                                    \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos))                                    \
  X(nvmlDeviceGetProcessUtilization, nvmlReturn_t,                                                               \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization, unsigned int* processSamplesCount,       \
     unsigned long long lastSeenTimeStamp))

#define GPULEDGER_NVML_POINTER_TYPE(name, ret, params) using name##_fn = ret(*) params;
GPULEDGER_NVML_FUNCTIONS(GPULEDGER_NVML_POINTER_TYPE)
#undef GPULEDGER_NVML_POINTER_TYPE

}  // namespace gpuledger::nvml_abi
