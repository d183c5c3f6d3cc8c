#pragma once
// Where the cgroup hierarchies are mounted on this host, and the few questions
// the agent asks of them. The v2 mount may be the whole /sys/fs/cgroup or, on
// hybrid hosts, something like /sys/fs/cgroup/unified: read, never assumed.
#include <cstdint>
#include <optional>
#include <string>

namespace gpuledger::identity {

struct CgroupMounts {
  std::string v2;          // cgroup2 mount point, "" if none
  std::string v1_controller;  // the v1 controller used for the fallback, e.g. "memory"
  std::string v1;          // its mount point, "" if none
  std::optional<uint32_t> v1_subsys_index;  // its index in the kernel's subsystem table
};

// Reads /proc/self/mountinfo and /proc/cgroups (paths overridable for tests).
CgroupMounts discover_cgroup_mounts(const std::string& mountinfo = "/proc/self/mountinfo",
                                    const std::string& proc_cgroups = "/proc/cgroups",
                                    const std::string& v1_controller = "memory");

// The cgroup id of a cgroup directory: its kernfs inode number.
std::optional<uint64_t> cgroup_id_of(const std::string& dir);

// The cgroup with this id under `mount`, asked of the kernel directly: a
// cgroup id is a kernfs file handle (open_by_handle_at; needs
// CAP_DAC_READ_SEARCH). kUnknown where the kernel cannot say (no handle
// support, not permitted, a path outside this mount namespace's view).
struct CgroupById {
  enum State { kFound, kGone, kUnknown } state = kUnknown;
  std::string path;  // kFound: relative to the mount, with a leading '/'
};
CgroupById cgroup_by_id(const std::string& mount, uint64_t id);

// Finds the cgroup with this id under `mount` (a fallback for when the
// kernel-side path capture was lost): by its handle, else by walking the
// tree; returns the path relative to the mount, with a leading '/'.
std::optional<std::string> find_cgroup_path(const std::string& mount, uint64_t id);

}  // namespace gpuledger::identity
