#include "probes/library_attacher.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "probes/overlay_layers.h"

#include <unistd.h>

namespace gpuledger::probes {

bool exports_driver_api(const std::vector<ElfFunction>& functions) {
  auto exports = [&](std::string_view name) {
    return std::any_of(functions.begin(), functions.end(), [&](const ElfFunction& f) { return f.name == name; });
  };
  return exports("cuInit") && exports("cuDriverGetVersion");
}

LibraryAttacher::LibraryAttacher(CudaProbeProgram& program, ProbePlanOptions options, LibOpenWatcher* watcher,
                                 std::string proc_root)
    : program_(program), options_(options), watcher_(watcher), proc_root_(std::move(proc_root)) {}

void LibraryAttacher::reject(const std::string& path, const std::string& origin, const std::string& why,
                             const FileId& file) {
  auto [it, fresh] = rejected_.try_emplace(path);
  if (fresh || it->second.error != why) spdlog::warn("CUDA library {} ({}) not attached: {}", path, origin, why);
  it->second.path = path;
  it->second.origin = origin;
  it->second.error = why;
  it->second.file = file;
  // Bounded: a tenant can make endless paths fail; the oldest complaint goes.
  while (rejected_.size() > kRejectedBound) rejected_.erase(rejected_.begin());
}

void LibraryAttacher::remember_judged(const FileId& key) {
  if (not_driver_.size() >= kJudgedFilesBound) {
    spdlog::info("{} files judged not to be the CUDA driver: forgetting them (each is read once more)",
                 not_driver_.size());
    not_driver_.clear();
  }
  not_driver_.insert(key);
  if (watcher_) watcher_->remember(key);
}

bool LibraryAttacher::offer(const std::string& path, const std::string& origin) {
  std::lock_guard lock(mu_);
  if (origin == "cli" || origin == "host") named_paths_.emplace(path, origin);
  std::string why;
  auto file = open_named_file(path, why);
  if (!file) {
    if (origin != "host") reject(path, origin, why);
    return false;
  }
  auto key = probed_inode(*file, std::nullopt, why);
  if (!key) {
    reject(path, origin, why);
    return false;
  }
  if (attached_.contains(*key)) return true;
  prefer_backing_file(*file, static_cast<uint32_t>(::getpid()), path, *key);
  return judge(*file, *key, origin, false);
}

bool LibraryAttacher::offer(const LibraryCandidate& candidate) {
  std::lock_guard lock(mu_);
  const Mapping& m = candidate.mapping;
  if (candidate.mapped_file) {
    if (attached_.contains(*candidate.mapped_file)) return true;
    if (not_driver_.contains(*candidate.mapped_file)) return false;
  } else if (printed_judged_.contains(m.printed)) {
    return false;  // the backstop looked at this file before (attached or not, the watcher has it)
  }
  // The fast path by name is only a hint for the log level: a renamed copy is
  // judged by its symbols all the same.
  const bool quiet = !is_cuda_library_name(m.path);
  std::string why;
  auto file = open_mapped_file(proc_root_, candidate.pid, m, candidate.mapped_file, why);
  if (!file) {
    if (why.starts_with(kGone)) {
      spdlog::debug("pid {}: {}: {}", candidate.pid, m.path, why);
      return false;
    }
    if (!quiet) reject("pid " + std::to_string(candidate.pid) + ": " + m.path, candidate.origin, why);
    return false;
  }
  auto key = probed_inode(*file, candidate.mapped_file, why);
  if (!key) {
    if (!quiet) reject(file->label, candidate.origin, why);
    return false;
  }
  if (printed_judged_.size() >= kJudgedFilesBound) printed_judged_.clear();
  printed_judged_.insert(m.printed);
  if (attached_.contains(*key)) return true;
  if (not_driver_.contains(*key)) return false;
  prefer_backing_file(*file, candidate.pid, m.path, *key);
  return judge(*file, *key, candidate.origin, quiet);
}

std::optional<FileId> LibraryAttacher::probed_inode(const OpenedFile& file, const std::optional<FileId>& mapped,
                                                    std::string& why) {
  if (!file.on_overlay) return file.id;
  // An overlay inode is not what the kernel probes: two containers of one
  // image would be probed twice under two keys, and count every call twice.
  // No path the agent could walk to the backing layer is trustworthy (a
  // tenant writes its own mount options), so the kernel names it.
  auto real = watcher_ ? watcher_->identify(file.fd.get()) : std::nullopt;
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

void LibraryAttacher::prefer_backing_file(OpenedFile& file, uint32_t pid, const std::string& path,
                                          const FileId& key) {
  if (!file.on_overlay || attached_.contains(key) || not_driver_.contains(key)) return;
  if (auto backing = open_overlay_backing(proc_root_, pid, path, file.id.dev, key)) {
    file = std::move(*backing);
    return;
  }
  spdlog::warn("{}: its backing layer file was not found in the host's mount table; probes attached through "
               "the overlay keep that mount busy until they are detached", file.label);
}

bool LibraryAttacher::judge(OpenedFile& file, const FileId& key, const std::string& origin, bool quiet) {
  std::vector<ProbeSpec> specs;
  try {
    auto functions = read_dynamic_functions(file.fd.get(), file.label);
    if (!exports_driver_api(functions)) {
      if (!quiet) reject(file.label, origin, "does not export the CUDA driver API (cuInit, cuDriverGetVersion)", key);
      remember_judged(key);
      return false;
    }
    specs = plan_probes(functions, call_names_, options_);
  } catch (const Error& e) {
    if (quiet) {
      remember_judged(key);
      return false;
    }
    reject(file.label, origin, e.what(), key);
    return false;
  }
  if (specs.empty()) {
    reject(file.label, origin, "no CUDA driver entry points among its dynamic symbols", key);
    remember_judged(key);
    return false;
  }
  // Through the descriptor's magic link: the kernel resolves it to the very
  // inode read above, whatever has happened to any path since.
  Entry entry;
  entry.links = program_.attach(file.attach_path(), specs);
  entry.record = LibraryRecord{file.label, origin, key, entry.links.probes, entry.links.failures, ""};
  if (entry.links.probes == 0) {
    reject(file.label, origin, "every probe failed to attach: " + entry.links.failures.front(), key);
    return false;
  }
  spdlog::info("attached {} probes to {} ({}; dev {} inode {}){}", entry.record.probes, file.label, origin, key.dev,
               key.ino, entry.links.failures.empty() ? "" : ", some failed");
  for (const auto& f : entry.links.failures) spdlog::warn("probe on {} failed: {}", file.label, f);
  // The file is covered now, whichever path earlier attempts used: forget
  // their complaints.
  for (auto it = rejected_.begin(); it != rejected_.end();)
    it = it->second.file == key ? rejected_.erase(it) : std::next(it);
  attached_.emplace(key, std::move(entry));
  if (watcher_) watcher_->remember(key);
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

size_t LibraryAttacher::files_judged() const {
  std::lock_guard lock(mu_);
  return not_driver_.size();
}

bool LibraryAttacher::judged(const FileId& file) const {
  std::lock_guard lock(mu_);
  return attached_.contains(file) || not_driver_.contains(file);
}

std::string LibraryAttacher::call_name(uint32_t id) const {
  std::lock_guard lock(mu_);
  const std::string* name = call_names_.name_of(id);
  return name ? *name : "call-" + std::to_string(id);
}

}  // namespace gpuledger::probes
