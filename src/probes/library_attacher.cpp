#include "probes/library_attacher.h"

#include <sys/stat.h>

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "probes/call_name_map.h"
#include "probes/probe_target.h"

namespace gpuledger::probes {

bool exports_driver_api(const std::vector<ElfFunction>& functions) {
  auto exports = [&](std::string_view name) {
    return std::any_of(functions.begin(), functions.end(), [&](const ElfFunction& f) { return f.name == name; });
  };
  return exports("cuInit") && exports("cuDriverGetVersion");
}

LibraryAttacher::LibraryAttacher(CudaProbeProgram& program, ProbePlanOptions options, LibOpenWatcher* watcher,
                                 std::string proc_root, size_t max_libraries)
    : program_(program),
      options_(options),
      watcher_(watcher),
      proc_root_(std::move(proc_root)),
      max_libraries_(max_libraries) {
  keep_call_names_in(call_names_, program_.maps().call_names);  // ids of taken-over links keep their names
}

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
  if (watcher_) watcher_->remember(key, false);
}

bool LibraryAttacher::offer(const std::string& path, const std::string& origin) {
  std::lock_guard lock(mu_);
  if (origin == "cli" || origin == "host") named_paths_.emplace(path, origin);
  std::string why;
  auto target = open_named_probe_target(path, watcher_, why);
  if (!target) {
    if (origin != "host" || why != "no such file") reject(path, origin, why);
    return false;
  }
  if (attached_.contains(target->key)) return true;
  return judge(*target, origin, false);
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
  auto target = open_probe_target(proc_root_, candidate, watcher_, why);
  if (!target) {
    if (why.starts_with(kGone)) {
      spdlog::debug("pid {}: {}: {}", candidate.pid, m.path, why);
      return false;
    }
    if (!quiet) reject("pid " + std::to_string(candidate.pid) + ": " + m.path, candidate.origin, why);
    return false;
  }
  const bool covered =
      attached_.contains(target->key) || (!not_driver_.contains(target->key) && judge(*target, candidate.origin, quiet));
  // Remembered for the backstop only once judged: a file refused for now (at
  // the bound, every probe failed) is offered again at the next scan.
  if (attached_.contains(target->key) || not_driver_.contains(target->key)) {
    if (printed_judged_.size() >= kJudgedFilesBound) printed_judged_.clear();
    printed_judged_[m.printed] = target->key;
  }
  return covered;
}

bool LibraryAttacher::judge(ProbeTarget& target, const std::string& origin, bool quiet) {
  const FileId& key = target.key;
  PlanBySet plan;
  try {
    auto functions = read_dynamic_functions(target.file.fd.get(), target.file.label);
    if (!exports_driver_api(functions)) {
      if (!quiet) reject(target.file.label, origin, "does not export the CUDA driver API (cuInit, cuDriverGetVersion)", key);
      remember_judged(key);
      return false;
    }
    // The full plan, cut by call rate: the hot part attached while the set is full.
    plan = plan_driver_by_set(functions, call_names_, options_);
  } catch (const Error& e) {
    if (quiet) {
      remember_judged(key);
      return false;
    }
    reject(target.file.label, origin, e.what(), key);
    return false;
  }
  if (plan.rare.empty() && plan.hot.empty()) {
    reject(target.file.label, origin, "no CUDA driver entry points among its dynamic symbols", key);
    remember_judged(key);
    return false;
  }
  if (attached_.size() >= max_libraries_) {
    ++limit_rejections_;
    reject(target.file.label, origin,
           "not probed: " + std::to_string(max_libraries_) + " driver files are probed already (the bound)", key);
    return false;
  }
  prefer_backing_file(proc_root_, target);
  const OpenedFile& file = target.file;
  // Through the descriptor's magic link: the kernel resolves it to the very
  // inode read above, whatever has happened to any path since.
  AttachedFile entry =
      attach_plan(program_, file.attach_path(), std::move(plan), key, options_.hot_path, file.label, origin);
  if (entry.record.probes == 0 && !entry.record.probe_failures.empty()) {
    reject(file.label, origin, "every probe failed to attach: " + entry.record.probe_failures.front(), key);
    return false;
  }
  spdlog::info("{} {} probes to {} ({}; dev {} inode {}){}", entry.adopted() ? "took over the pinned" : "attached",
               entry.record.probes, file.label, origin, key.dev, key.ino,
               entry.record.probe_failures.empty() ? "" : ", some failed");
  for (const auto& f : entry.record.probe_failures) spdlog::warn("probe on {} failed: {}", file.label, f);
  // The file is covered now, whichever path earlier attempts used: forget
  // their complaints.
  for (auto it = rejected_.begin(); it != rejected_.end();)
    it = it->second.file == key ? rejected_.erase(it) : std::next(it);
  entry.file = std::move(target.file.fd);  // keeps attach_path() valid for a retry
  entry.schedule_retry(std::chrono::steady_clock::now());
  attached_.emplace(key, std::move(entry));
  if (watcher_) watcher_->remember(key, true);
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
  return records_of(attached_);
}

std::set<FileId> LibraryAttacher::attached_files() const {
  std::lock_guard lock(mu_);
  std::set<FileId> out;
  for (const auto& [key, entry] : attached_) out.insert(key);
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
  return probes_in(attached_);
}

size_t LibraryAttacher::probe_attach_failures() const {
  std::lock_guard lock(mu_);
  return probe_failures_in(attached_);
}

size_t LibraryAttacher::files_judged() const {
  std::lock_guard lock(mu_);
  return not_driver_.size();
}

bool LibraryAttacher::judged(const FileId& file) const {
  std::lock_guard lock(mu_);
  return attached_.contains(file) || not_driver_.contains(file);
}

void LibraryAttacher::detach_unused(const std::vector<LibraryCandidate>& scanned) {
  std::lock_guard lock(mu_);
  for (const FileId& gone : probes::detach_unused(attached_, mapped_keys(scanned, printed_judged_))) {
    if (watcher_) watcher_->forget(gone);
    std::erase_if(printed_judged_, [&](const auto& kv) { return kv.second == gone; });
    ++detached_;
    program_.unpin(gone);  // after its links closed: the kernel lets go of them
  }
}

void LibraryAttacher::retry_incomplete(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  retry_missing_in(attached_, program_, now);
}

size_t LibraryAttacher::libraries_incomplete() const {
  std::lock_guard lock(mu_);
  return incomplete_in(attached_);
}

uint64_t LibraryAttacher::libraries_detached() const {
  std::lock_guard lock(mu_);
  return detached_;
}

uint64_t LibraryAttacher::limit_rejections() const {
  std::lock_guard lock(mu_);
  return limit_rejections_;
}

void LibraryAttacher::set_hot_path(bool on) {
  std::lock_guard lock(mu_);
  options_.hot_path = on;
  set_hot_path_in(attached_, program_, on);
}

std::string LibraryAttacher::call_name(uint32_t id) const {
  std::lock_guard lock(mu_);
  const std::string* name = call_names_.name_of(id);
  return name ? *name : "call-" + std::to_string(id);
}

}  // namespace gpuledger::probes
