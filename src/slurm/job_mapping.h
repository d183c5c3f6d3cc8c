#pragma once
// The HPC job-mapping files dcgm-exporter reads (--hpc-job-mapping-dir): a
// directory with one file per GPU, named by the GPU's index ("0"), by the
// index and GPU instance of a MIG instance ("0.11"), or by a GPU or MIG UUID,
// whose lines are the ids of the jobs holding it ("1234", or "1234 1000" with
// the job's uid). A Slurm prolog writes them and the epilog removes them
// (deploy/slurm/).
//
// The directory is configuration the agent trusts no more than a tenant's
// file: anyone able to write there could name any job. So it is read through
// a directory descriptor, each file opened relative to it without following
// a link (O_NOFOLLOW) and only when it is a regular file, everything bounded
// (kMaxFiles, kMaxFileBytes, kMaxLinesPerFile), every name and line checked
// (dot files - the prolog's lock and files being written - are not read)
// against the shapes above; what does not fit is skipped and counted. A job
// id read here is only a claim: the ledger bills a job as a GPU's holder only
// when a running Slurm job of that id has its cgroup (slurm_cgroups.h).
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::slurm {

inline constexpr size_t kMaxFiles = 1024;
inline constexpr size_t kMaxFileBytes = 4096;
inline constexpr size_t kMaxLinesPerFile = 64;

struct JobMapping {
  // By file name (the GPU as the file names it): the job ids, in file order,
  // each once.
  std::map<std::string, std::vector<std::string>> jobs_by_gpu;
  size_t skipped_files = 0;  // a name of no GPU shape, not a regular file, a link, too large, past kMaxFiles
  size_t skipped_lines = 0;  // not "<job>" or "<job> <uid>", or past kMaxLinesPerFile
};

// Whether a file name has one of the GPU shapes above.
bool gpu_file_name(std::string_view name);
// A job id as Slurm's cgroups carry it: 1 to 20 digits.
bool job_id(std::string_view text);
// The job ids of one file's text (bounded by kMaxLinesPerFile).
std::vector<std::string> parse_job_lines(std::string_view text, size_t* skipped = nullptr);

// Reads the directory open at `dirfd` (not consumed). Throws Error when the
// directory itself cannot be listed.
JobMapping read_job_mapping(int dirfd);

}  // namespace gpuledger::slurm
