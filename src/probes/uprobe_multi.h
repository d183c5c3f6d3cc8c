#pragma once
// Multi-uprobe links (Linux 6.6+) made with bpf(2) directly: the libbpf
// Debian 12 ships (1.1) predates bpf_program__attach_uprobe_multi. One link
// puts a program on many offsets of one file, attached and detached at once.
#include <cstdint>
#include <string>
#include <vector>

namespace gpuledger::probes {

// BPF_TRACE_UPROBE_MULTI: a program must be loaded with this expected attach
// type to be linked this way (and can then not be linked one probe at a time).
inline constexpr uint32_t kAttachUprobeMulti = 48;

// Links `prog_fd` on every offset of `path` (entries, or returns with
// `retprobe`), each with its cookie (`cookies` empty: all 0), for process
// `pid` only or every process (0). Returns the link fd, or -errno.
int link_uprobe_multi(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                      const std::vector<uint64_t>& cookies, bool retprobe, int pid = 0);

}  // namespace gpuledger::probes
