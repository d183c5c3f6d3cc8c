#pragma once
// The backing file of an overlayfs file, opened as a descriptor, for the one
// purpose of attaching uprobes without pinning the container's mount: a
// uprobe holds the path it was attached through, and an overlay path keeps
// the overlay busy (an image unpack or a container teardown then fails to
// unmount it). The backing file lives in a layer directory on the host.
//
// Nothing here is trusted to be right: the layer directories come from the
// host's mount table (written by the container runtime, not the tenant), the
// file's place in the overlay from the kernel's mount fields, the walk below
// each layer follows no symlink and cannot leave the host's root, and the
// result is kept only when its inode is the one the kernel says the process
// maps. Any doubt gives nothing.
#include <cstdint>
#include <optional>
#include <string>

#include "probes/mapped_file.h"

namespace gpuledger::probes {

struct OverlayLayers {
  std::string upper;
  std::vector<std::string> lowers;  // topmost first
};

// The layers of the overlay mounted with device `device` ("major:minor") in
// `host_mountinfo`, or nullopt when no overlay there has it.
std::optional<OverlayLayers> overlay_layers(const std::string& host_mountinfo, const std::string& device);

// Where `path` (as the process sees it) sits inside its overlay: the mount's
// root joined with the part of `path` below the mount point, from the
// process's `mountinfo` line with that `device`. nullopt when no mount of
// that device holds `path`.
std::optional<std::string> path_in_overlay(const std::string& mountinfo, const std::string& device,
                                           const std::string& path);

// Opens the file that backs `path` of process `pid` in its overlay of device
// `overlay_dev`, accepted only when its inode is `expected`. `proc` is the
// proc mount; the host's view is PID 1's, else the agent's own.
std::optional<OpenedFile> open_overlay_backing(const std::string& proc, uint32_t pid, const std::string& path,
                                               uint64_t overlay_dev, const FileId& expected);

}  // namespace gpuledger::probes
