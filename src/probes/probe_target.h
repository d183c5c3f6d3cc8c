#pragma once
// What a uprobe on a candidate file would land on, opened once as a
// descriptor and proven: shared by the driver's and the runtime's attachers so
// both attach only to the inode a process really mapped (mapped_file.h) and,
// on overlayfs, to its backing layer file (overlay_layers.h).
#include <cstdint>
#include <optional>
#include <string>

#include "probes/library_discovery.h"
#include "probes/mapped_file.h"

namespace gpuledger::probes {

struct ProbeTarget {
  OpenedFile file;  // read the ELF from it, attach through file.attach_path()
  FileId key;       // the inode the kernel probes: one attachment per key
  uint32_t pid = 0;  // whose view `path` is in (the agent's own for named paths)
  std::string path;
};

// For a file process `candidate.pid` maps. `watcher` names overlay backing
// inodes (may be null: then overlay files are refused). nullopt with `why`;
// `why` starts with kGone when the process or mapping is simply gone.
std::optional<ProbeTarget> open_probe_target(const std::string& proc, const LibraryCandidate& candidate,
                                             LibOpenWatcher* watcher, std::string& why);

// For a host path named to the agent (--cuda-lib, --cuda-runtime-lib, install paths).
// The path is in the agent's own view.
std::optional<ProbeTarget> open_named_probe_target(const std::string& path, LibOpenWatcher* watcher,
                                                   std::string& why);

// Just before attaching (only then: most files judged are never probed): on
// overlayfs, swaps the target's file for its backing layer file when that is
// found and proven to be the key, so the probes pin no container mount.
void prefer_backing_file(const std::string& proc, ProbeTarget& target);

}  // namespace gpuledger::probes
