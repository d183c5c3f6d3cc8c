#include "probes/attached_file.h"

#include <sys/stat.h>

#include <algorithm>

#include "common/log.h"

namespace gpuledger::probes {

bool AttachedFile::deleted() const {
  struct stat st {};
  return file.valid() && ::fstat(file.get(), &st) == 0 && st.st_nlink == 0;
}

bool AttachedFile::incomplete() const { return !links.missing.empty() && retries >= kAttachRetries; }

void AttachedFile::schedule_retry(std::chrono::steady_clock::time_point now) {
  if (links.missing.empty()) return;
  next_retry = now + kRetryFirst;
  spdlog::info("{}: {} probe points missing, attached again in {} ms", record.path, links.missing.size(),
               kRetryFirst.count());
}

void AttachedFile::retry_missing(CudaProbeProgram& program, std::chrono::steady_clock::time_point now) {
  if (links.missing.empty() || retries >= kAttachRetries || now < next_retry) return;
  ++retries;
  program.attach_missing(links);
  record.probes = links.probes;
  record.probe_failures = links.failures;
  if (links.missing.empty()) {
    spdlog::info("{}: complete after {} attach retries: {} probes", record.path, retries, record.probes);
  } else if (retries >= kAttachRetries) {
    spdlog::warn("{}: left incomplete after {} attach retries: {} probe points missing ({}); "
                 "gpuledger_cuda_libraries_incomplete (driver) or gpuledger_runtime_libraries_incomplete counts it",
                 record.path, retries, links.missing.size(), links.failures.front());
  } else {
    next_retry = now + kRetryFirst * (1 << retries);
  }
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
