#include "probes/probe_target.h"

#include <unistd.h>

#include "common/log.h"
#include "probes/overlay_layers.h"

namespace gpuledger::probes {
namespace {

// The inode a uprobe through `file` lands on, checked against `mapped` (the
// kernel's report) when there is one. An overlay inode is not what the kernel
// probes: two containers of one image would be probed twice under two keys.
// No path the agent could walk to the backing layer is trustworthy (a tenant
// writes its own mount options), so the kernel names it.
std::optional<FileId> probed_inode(const OpenedFile& file, const std::optional<FileId>& mapped,
                                   LibOpenWatcher* watcher, std::string& why) {
  if (!file.on_overlay) return file.id;
  auto real = watcher ? watcher->identify(file.fd.get()) : std::nullopt;
  if (!real) {
    why = "on overlayfs, and the kernel could not name its backing file (needs the mapping watcher; "
          "the file must be mappable)";
    return std::nullopt;
  }
  if (mapped && *real != *mapped) {
    why = "the mapping now holds another file: unmapped and remapped";
    return std::nullopt;
  }
  return real;
}

std::optional<ProbeTarget> finish(std::optional<OpenedFile> file, uint32_t pid,
                                  const std::string& path, const std::optional<FileId>& mapped,
                                  LibOpenWatcher* watcher, std::string& why) {
  if (!file) return std::nullopt;
  auto key = probed_inode(*file, mapped, watcher, why);
  if (!key) return std::nullopt;
  return ProbeTarget{std::move(*file), *key, pid, path};
}

}  // namespace

void prefer_backing_file(const std::string& proc, ProbeTarget& target) {
  if (!target.file.on_overlay) return;
  if (auto backing = open_overlay_backing(proc, target.pid, target.path, target.file.id.dev, target.key)) {
    target.file = std::move(*backing);
    return;
  }
  spdlog::warn("{}: its backing layer file was not found in the host's mount table; probes attached through "
               "the overlay keep that mount busy until they are detached", target.file.label);
}

std::optional<ProbeTarget> open_probe_target(const std::string& proc, const LibraryCandidate& candidate,
                                             LibOpenWatcher* watcher, std::string& why) {
  return finish(open_mapped_file(proc, candidate.pid, candidate.mapping, candidate.mapped_file, why),
                candidate.pid, candidate.mapping.path, candidate.mapped_file, watcher, why);
}

std::optional<ProbeTarget> open_named_probe_target(const std::string& path, LibOpenWatcher* watcher,
                                                   std::string& why) {
  return finish(open_named_file(path, why), static_cast<uint32_t>(::getpid()), path, std::nullopt, watcher, why);
}

}  // namespace gpuledger::probes
