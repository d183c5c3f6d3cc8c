#pragma once
// Which real file a path on overlayfs stands for. A uprobe on an overlay path
// lands on the underlying file (the upper copy, else the topmost lower layer
// holding it), and two containers started from one image share that file
// behind two different overlay inodes. Probing per overlay inode would count
// every call twice; probing per backing file counts it once.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::probes {

// `path` as the process `pid` sees it (its own root); returns the backing
// file's path as the agent can reach it, or nullopt when `path` is not on an
// overlay mount of that process or no layer holds it. `mountinfo` is the
// process's /proc/PID/mountinfo text. Layer paths there are the mounter's
// (the host's, for container runtimes); each of `roots` is tried as their
// prefix in turn, e.g. "/proc/1/root" (the host, from an agent in a pod)
// then "" (the agent's own view).
std::optional<std::string> overlay_backing_file(const std::string& mountinfo, const std::string& path,
                                                const std::vector<std::string>& roots);

}  // namespace gpuledger::probes
