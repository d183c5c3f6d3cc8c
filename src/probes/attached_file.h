#pragma once
// One probed file and what its lifecycle needs, shared by the driver's
// attacher (library_attacher.h) and the runtime's (runtime_attacher.h), so
// both let go of files the same way: a file no process maps any more whose
// last name is gone (an image removed, a copy deleted) is detached, and one
// where only some probes attached is attached again, what is missing only,
// with backoff.
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "probes/cuda_probe_program.h"
#include "probes/library_discovery.h"

namespace gpuledger::probes {

struct LibraryRecord {
  std::string path;  // as the process (or the command line) named it: "pid 42: /usr/lib/libcuda.so.1"
  std::string origin;
  FileId file;
  size_t probes = 0;
  std::vector<std::string> probe_failures;
  std::string error;  // why it was not attached, if it was not
};

struct AttachedFile {
  static constexpr int kAttachRetries = 8;
  static constexpr std::chrono::milliseconds kRetryFirst{100};

  LibraryRecord record;
  AttachedLibrary links;
  UniqueFd file;  // the verified file: whether it is deleted, and attach_path() for a retry
  int retries = 0;  // of the probes missing (links.missing)
  std::chrono::steady_clock::time_point next_retry{};

  // Named on the command line or at the driver's install paths: never detached.
  bool named() const { return record.origin == "cli" || record.origin == "host"; }
  bool deleted() const;     // its last name is gone
  bool incomplete() const;  // probes missing and every retry spent
  // Once attached: the first retry is due kRetryFirst from `now` if probes are missing.
  void schedule_retry(std::chrono::steady_clock::time_point now);
  // When due, attaches what is missing (then the next retry doubles the wait).
  void retry_missing(CudaProbeProgram& program, std::chrono::steady_clock::time_point now);
};

// The files a backstop scan saw mapped, as the inodes the kernel probes:
// each mapping's printed id, and what it was attached as (`attached_as`:
// printed id -> key, where an overlay file was probed through its layer).
std::set<FileId> mapped_keys(const std::vector<LibraryCandidate>& scanned, const std::map<FileId, FileId>& attached_as);

using AttachedFiles = std::map<FileId, AttachedFile>;

// What both attachers report of their files.
std::vector<LibraryRecord> records_of(const AttachedFiles& files);
size_t probes_in(const AttachedFiles& files);
size_t probe_failures_in(const AttachedFiles& files);
size_t incomplete_in(const AttachedFiles& files);
// retry_missing() on each file.
void retry_missing_in(AttachedFiles& files, CudaProbeProgram& program, std::chrono::steady_clock::time_point now);

// Erases the files of `files` that are unused - not named, not in `mapped`,
// deleted - closing their links and descriptors; logs each and returns their keys.
std::vector<FileId> detach_unused(AttachedFiles& files, const std::set<FileId>& mapped);

}  // namespace gpuledger::probes
