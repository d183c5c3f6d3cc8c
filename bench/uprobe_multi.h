#pragma once
// Multi-uprobe links (Linux 6.6+) through bpf(2) directly: the libbpf Debian 12
// ships (1.1) predates bpf_program__attach_uprobe_multi. The agent attaches
// this way where the kernel allows, so the floor must be able to as well.
#include <cstdint>
#include <string>
#include <vector>

namespace gpuledger::bench {

// BPF_TRACE_UPROBE_MULTI: a program must be loaded with this expected attach
// type to be linked as a multi-uprobe.
constexpr uint32_t kAttachUprobeMulti = 48;

// One link putting `prog_fd` on every offset of `path`, for every process
// (entries, or returns with `retprobe`). Returns the link fd, or -errno.
int link_uprobe_multi(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets, bool retprobe);

}  // namespace gpuledger::bench
