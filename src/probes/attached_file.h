#pragma once
// One probed file and what its lifecycle needs, shared by the driver's
// attacher (library_attacher.h) and the runtime's (runtime_attacher.h), so
// both let go of files the same way: a file no process maps any more whose
// last name is gone (an image removed, a copy deleted) is detached, and one
// where only some probes attached is attached again, what is missing only,
// with backoff.
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "probes/cuda_probe_program.h"
#include "probes/library_discovery.h"
#include "probes/probe_sets.h"

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
  AttachedLibrary links;  // the rare calls' probes: every probe set (probe_sets.h)
  std::vector<ProbeSpec> hot_specs;    // the hot path's part of the file's plan
  std::optional<AttachedLibrary> hot;  // those probes, attached while the set is full
  UniqueFd file;  // the verified file: whether it is deleted, and attach_path() for a retry
  int retries = 0;  // of the probes missing (links.missing, hot->missing)
  std::chrono::steady_clock::time_point next_retry{};

  // Named on the command line or at the driver's install paths: never detached.
  bool named() const { return record.origin == "cli" || record.origin == "host"; }
  bool deleted() const;     // its last name is gone
  bool incomplete() const;  // probes missing and every retry spent
  // Once attached: the first retry is due kRetryFirst from `now` if probes are missing.
  void schedule_retry(std::chrono::steady_clock::time_point now);
  // When due, attaches what is missing (then the next retry doubles the wait).
  void retry_missing(CudaProbeProgram& program, std::chrono::steady_clock::time_point now);
  // Attaches the hot path's probes (pinned beside the rare ones for `key`) or
  // detaches them; the rare probes, and every count made, stay as they are.
  void set_hot_path(CudaProbeProgram& program, const FileId& key, bool on);
  void update_record();  // probes and failures of both parts
  bool adopted() const { return links.adopted && (!hot || hot->adopted); }

 private:
  size_t missing() const { return links.missing.size() + (hot ? hot->missing.size() : 0); }
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
// A file's plan attached through `path` (a verified descriptor's magic link),
// pinned for `key`: its rare part, and its hot part when `hot_path`. The
// record names `label` and `origin`; every probe failed when
// record.probes is 0 with failures.
AttachedFile attach_plan(CudaProbeProgram& program, const std::string& path, PlanBySet plan, const FileId& key,
                         bool hot_path, const std::string& label, const std::string& origin);
// set_hot_path() on each file.
void set_hot_path_in(AttachedFiles& files, CudaProbeProgram& program, bool on);

// Erases the files of `files` that are unused - not named, not in `mapped`,
// deleted - closing their links and descriptors; logs each and returns their keys.
std::vector<FileId> detach_unused(AttachedFiles& files, const std::set<FileId>& mapped);

}  // namespace gpuledger::probes
