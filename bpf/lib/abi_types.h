/* The fixed-width C types of every contract between a BPF program and the
 * agent (cuda_probes.h, lib_discovery.h, nvidia_ioctl.h). Free of kernel and
 * libc headers so C++ can include the contracts as they are. */
#ifndef GPULEDGER_ABI_TYPES_H
#define GPULEDGER_ABI_TYPES_H

#ifdef __cplusplus
#include <cstdint>
typedef std::uint8_t gl_u8;
typedef std::uint32_t gl_u32;
typedef std::uint64_t gl_u64;
#else
typedef __u8 gl_u8;
typedef __u32 gl_u32;
typedef __u64 gl_u64;
#endif

#endif
