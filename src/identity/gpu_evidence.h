#pragma once
// Which GPU a workload's calls land on, from the driver's side of the world.
// A process's environment (CUDA_VISIBLE_DEVICES as /proc/PID/environ shows
// it) is what it was given at exec, not what the driver read at cuInit: the
// process may have changed it before (os.environ[...] before import torch),
// so it is only a hint. The devices the workload's processes hold open
// (/dev/nvidiaN descriptors) and NVML's process lists say where it really is;
// when the two disagree, the device side wins (docs/security.md).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "identity/gpu_visibility.h"

namespace gpuledger::identity {

inline constexpr size_t kMaxFdsExamined = 65536;
inline constexpr unsigned kNvidiaMajor = 195;  // the NVIDIA driver's character devices

// Where the scan of one process's descriptor table goes on. A process may pad
// its table (up to the kernel's fs.nr_open, a million by default) to push its
// device files past any bound; one call stats at most a bounded number of
// descriptors, and the next call for that process goes on after the last one
// looked at, so padding delays the answer by a few snapshots but never hides a
// device file the process keeps open.
struct FdScanCursor {
  unsigned next_fd = 0;    // the next call starts at this descriptor number
  bool truncated = false;  // the last call stopped at the bound, before the table's end
};

// The NVIDIA GPU minors (character device 195:N, N <= 247: the GPUs, not
// nvidiactl 255 or the caps) process `pid` holds open among the descriptors
// this call looks at, sorted. Each entry of /proc/PID/fd is stat'ed through a
// descriptor of that directory: the kernel answers for the file the process
// really holds open, whatever its name, so a tenant's own file called
// /dev/nvidia5 counts for nothing (and a device node its device cgroup denies
// cannot be held open). No path is resolved by name. At most `max_examined`
// descriptors from cursor.next_fd are looked at; the cursor then says where
// the next call goes on (0 again after the table's end). Empty when the
// process is gone or cannot be read.
std::vector<unsigned> read_open_gpu_minors(const std::string& proc_root, unsigned pid, FdScanCursor& cursor,
                                           size_t max_examined = kMaxFdsExamined);
// One call from descriptor 0 (tests, one-off readers).
std::vector<unsigned> read_open_gpu_minors(const std::string& proc_root, unsigned pid);

// How a workload's GPU was known: "device" (its open device files or NVML's
// process lists say so, alone or agreeing with the environment),
// "environment" (only its environment says so: no device-side evidence yet).
struct GpuChoice {
  std::optional<GpuIdentity> gpu;
  std::string source;      // "device", "environment", "" when unknown
  bool disagreed = false;  // the environment named a GPU the device side does not show
};

// `hint`: what the environment says (resolve_ordinal); `held`: the UUIDs of
// the GPUs the workload's processes hold open or NVML lists them on. A MIG
// hint is taken as it is (the device files name its parent GPU).
GpuChoice choose_gpu(const std::optional<GpuIdentity>& hint, const std::set<std::string>& held,
                     const std::vector<GpuIdentity>& inventory);

}  // namespace gpuledger::identity
