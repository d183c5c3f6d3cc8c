#include "probes/library_attacher.h"

#include <fstream>
#include <iterator>

#include "common/error.h"
#include "common/log.h"
#include "probes/elf_symbols.h"
#include "probes/overlay_backing.h"

namespace gpuledger::probes {

LibraryAttacher::LibraryAttacher(CudaProbeProgram& program, ProbePlanOptions options, LibOpenWatcher* watcher)
    : program_(program), options_(options), watcher_(watcher) {}

void LibraryAttacher::reject(const std::string& path, const std::string& origin, const std::string& why,
                             const FileId& file) {
  auto [it, fresh] = rejected_.try_emplace(path);
  if (fresh || it->second.error != why) spdlog::warn("CUDA library {} ({}) not attached: {}", path, origin, why);
  it->second.path = path;
  it->second.origin = origin;
  it->second.error = why;
  it->second.file = file;
}

bool LibraryAttacher::offer(const std::string& path, const std::string& origin) {
  return offer(LibraryCandidate{path, origin, 0, std::nullopt});
}

std::optional<FileId> LibraryAttacher::probed_file(const LibraryCandidate& candidate) {
  if (candidate.probed_file) return candidate.probed_file;
  // An overlay inode is not what the kernel probes: attaching by it could
  // probe one file twice. Without its backing file, leave it alone.
  if (on_overlayfs(candidate.path)) {
    // A path named to the agent (not seen in a process) is in the agent's own
    // view: in a container, its image's layers, found through its own mounts
    // (the host's root first, as for other processes; then its own view).
    if (candidate.pid == 0) {
      std::ifstream in("/proc/self/mountinfo");
      std::string mountinfo((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (auto backing = overlay_backing_file(mountinfo, candidate.path, {"/proc/1/root", ""}))
        if (auto id = file_id_of(*backing)) return id;
    }
    reject(candidate.path, candidate.origin, "on overlayfs, and its backing layer file was not found");
    return std::nullopt;
  }
  return file_id_of(candidate.path);
}

bool LibraryAttacher::offer(const LibraryCandidate& candidate) {
  const std::string& path = candidate.path;
  const std::string& origin = candidate.origin;
  std::lock_guard lock(mu_);
  if (origin == "cli" || origin == "host") named_paths_.emplace(path, origin);
  if (!file_id_of(path)) {
    if (origin != "host") reject(path, origin, "no such file (or not a regular file)");
    return false;
  }
  auto id = probed_file(candidate);
  if (!id) return false;
  if (attached_.contains(*id)) return true;

  std::vector<ProbeSpec> specs;
  try {
    specs = plan_probes(read_dynamic_functions(path), call_names_, options_);
  } catch (const Error& e) {
    reject(path, origin, e.what(), *id);
    return false;
  }
  if (specs.empty()) {
    reject(path, origin, "no CUDA driver entry points among its dynamic symbols", *id);
    return false;
  }
  Entry entry;
  entry.links = program_.attach(path, specs);
  entry.record = LibraryRecord{path, origin, *id, entry.links.probes, entry.links.failures, ""};
  if (entry.links.probes == 0) {
    reject(path, origin, "every probe failed to attach: " + entry.links.failures.front(), *id);
    return false;
  }
  spdlog::info("attached {} probes to {} ({}; dev {} inode {}){}", entry.record.probes, path, origin, id->dev,
               id->ino, entry.links.failures.empty() ? "" : ", some failed");
  for (const auto& f : entry.links.failures) spdlog::warn("probe on {} failed: {}", path, f);
  // The file is covered now, whichever path earlier attempts used (an open
  // seen while it was still being written, say): forget their complaints.
  for (auto it = rejected_.begin(); it != rejected_.end();)
    it = it->second.file == *id ? rejected_.erase(it) : std::next(it);
  attached_.emplace(*id, std::move(entry));
  if (watcher_) watcher_->remember(*id);
  return true;
}

void LibraryAttacher::recheck_named_paths() {
  std::map<std::string, std::string> named;
  {
    std::lock_guard lock(mu_);
    named = named_paths_;
  }
  for (const auto& [path, origin] : named) offer(path, origin);
}

std::vector<LibraryRecord> LibraryAttacher::attached() const {
  std::lock_guard lock(mu_);
  std::vector<LibraryRecord> out;
  for (const auto& [id, entry] : attached_) out.push_back(entry.record);
  return out;
}

std::vector<LibraryRecord> LibraryAttacher::rejected() const {
  std::lock_guard lock(mu_);
  std::vector<LibraryRecord> out;
  for (const auto& [path, record] : rejected_) out.push_back(record);
  return out;
}

size_t LibraryAttacher::probes_attached() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : attached_) n += entry.record.probes;
  return n;
}

size_t LibraryAttacher::probe_attach_failures() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : attached_) n += entry.record.probe_failures.size();
  return n;
}

std::string LibraryAttacher::call_name(uint32_t id) const {
  std::lock_guard lock(mu_);
  const std::string* name = call_names_.name_of(id);
  return name ? *name : "call-" + std::to_string(id);
}

}  // namespace gpuledger::probes
