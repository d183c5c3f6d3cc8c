#include "probes/attached_file.h"

#include <sys/stat.h>

#include <algorithm>

#include "common/log.h"

namespace gpuledger::probes {

bool AttachedFile::deleted() const {
  struct stat st {};
  return file.valid() && ::fstat(file.get(), &st) == 0 && st.st_nlink == 0;
}

bool AttachedFile::incomplete() const { return missing() > 0 && retries >= kAttachRetries; }

void AttachedFile::schedule_retry(std::chrono::steady_clock::time_point now) {
  if (missing() == 0) return;
  next_retry = now + kRetryFirst;
  spdlog::info("{}: {} probe points missing, attached again in {} ms", record.path, missing(), kRetryFirst.count());
}

void AttachedFile::update_record() {
  record.probes = links.probes + (hot ? hot->probes : 0);
  record.probe_failures = links.failures;
  if (hot) record.probe_failures.insert(record.probe_failures.end(), hot->failures.begin(), hot->failures.end());
}

void AttachedFile::retry_missing(CudaProbeProgram& program, std::chrono::steady_clock::time_point now) {
  if (missing() == 0 || retries >= kAttachRetries || now < next_retry) return;
  ++retries;
  if (!links.missing.empty()) program.attach_missing(links);
  if (hot && !hot->missing.empty()) program.attach_missing(*hot);
  update_record();
  if (missing() == 0) {
    spdlog::info("{}: complete after {} attach retries: {} probes", record.path, retries, record.probes);
  } else if (retries >= kAttachRetries) {
    spdlog::warn("{}: left incomplete after {} attach retries: {} probe points missing ({}); "
                 "gpuledger_cuda_libraries_incomplete (driver) or gpuledger_runtime_libraries_incomplete counts it",
                 record.path, retries, missing(), record.probe_failures.front());
  } else {
    next_retry = now + kRetryFirst * (1 << retries);
  }
}

void AttachedFile::set_hot_path(CudaProbeProgram& program, const FileId& key, bool on) {
  if (on == hot.has_value() || hot_specs.empty()) return;
  if (on) {
    hot = program.attach(links.path, hot_specs, links.pinned_as ? std::optional(key) : std::nullopt, PinnedSet::kHot);
    if (!hot->missing.empty()) {  // retried with the rest, from the first wait
      retries = 0;
      schedule_retry(std::chrono::steady_clock::now());
    }
  } else {
    hot.reset();  // closes the links: the kernel stops trapping there
    program.unpin(key, PinnedSet::kHot);
  }
  update_record();
}

AttachedFile attach_plan(CudaProbeProgram& program, const std::string& path, PlanBySet plan, const FileId& key,
                         bool hot_path, const std::string& label, const std::string& origin) {
  AttachedFile entry;
  entry.record = LibraryRecord{label, origin, key, 0, {}, ""};
  entry.links = program.attach(path, plan.rare, key, PinnedSet::kRare);
  entry.hot_specs = std::move(plan.hot);
  entry.set_hot_path(program, key, hot_path);
  entry.update_record();
  return entry;
}

void set_hot_path_in(AttachedFiles& files, CudaProbeProgram& program, bool on) {
  for (auto& [key, entry] : files) entry.set_hot_path(program, key, on);
}

std::vector<LibraryRecord> records_of(const AttachedFiles& files) {
  std::vector<LibraryRecord> out;
  for (const auto& [key, entry] : files) out.push_back(entry.record);
  return out;
}

size_t probes_in(const AttachedFiles& files) {
  size_t n = 0;
  for (const auto& [key, entry] : files) n += entry.record.probes;
  return n;
}

size_t probe_failures_in(const AttachedFiles& files) {
  size_t n = 0;
  for (const auto& [key, entry] : files) n += entry.record.probe_failures.size();
  return n;
}

size_t incomplete_in(const AttachedFiles& files) {
  return std::count_if(files.begin(), files.end(), [](const auto& kv) { return kv.second.incomplete(); });
}

void retry_missing_in(AttachedFiles& files, CudaProbeProgram& program, std::chrono::steady_clock::time_point now) {
  for (auto& [key, entry] : files) entry.retry_missing(program, now);
}

std::set<FileId> mapped_keys(const std::vector<LibraryCandidate>& scanned, const std::map<FileId, FileId>& attached_as) {
  std::set<FileId> mapped;
  for (const auto& c : scanned) {
    mapped.insert(c.mapping.printed);
    if (auto it = attached_as.find(c.mapping.printed); it != attached_as.end()) mapped.insert(it->second);
  }
  return mapped;
}

std::vector<FileId> detach_unused(AttachedFiles& files, const std::set<FileId>& mapped) {
  std::vector<FileId> gone;
  for (auto it = files.begin(); it != files.end();) {
    const auto& [key, entry] = *it;
    if (entry.named() || mapped.contains(key) || !entry.deleted()) {
      ++it;
      continue;
    }
    spdlog::info("detached {} probes from {}: no process maps it and its file is deleted", entry.record.probes,
                 entry.record.path);
    gone.push_back(key);
    it = files.erase(it);  // closes its links and its descriptor
  }
  return gone;
}

}  // namespace gpuledger::probes
