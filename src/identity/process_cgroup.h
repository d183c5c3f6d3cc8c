#pragma once
// The cgroup and start time of a live process, from /proc/PID, for a GPU user
// the probes never saw (a Vulkan or OpenCL process NVML lists). Read through
// one descriptor of /proc/PID (O_NOFOLLOW): both files are of the same
// process, or the read fails (a pid reused in between cannot mix them up);
// each read is bounded, and nothing a tenant names is followed.
#include <cstdint>
#include <optional>
#include <string>

namespace gpuledger::identity {

struct ProcessCgroup {
  std::string cgroup_path;  // the v2 path ("0::"), else the v1 controller's; leading '/'
  uint64_t start_unix_us = 0;  // when the process started (0: unknown)
};

// none: gone, unreadable, or no usable cgroup line.
std::optional<ProcessCgroup> read_process_cgroup(const std::string& proc_root, uint32_t pid,
                                                 const std::string& v1_controller = "memory");

// The cgroup path in /proc/PID/cgroup text: the "0::" line, else the line of
// the v1 controller; none when neither is there.
std::optional<std::string> cgroup_path_in(const std::string& text, const std::string& v1_controller);

// Field 22 of /proc/PID/stat (start time, clock ticks after boot), read after
// the last ')' (the command name may hold spaces and parentheses).
std::optional<uint64_t> start_ticks_in(const std::string& stat);

}  // namespace gpuledger::identity
