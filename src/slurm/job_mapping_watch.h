#pragma once
// The job-mapping directory (job_mapping.h), watched: opened once as a
// descriptor, watched with inotify through that descriptor, and read again
// only when inotify says something in it changed (or its queue overflowed).
// A directory that is missing or cannot be read is the source being down:
// the agent's windows are then "allocation unknown" until it can be read.
// No thread: the agent polls it once per ledger observation.
#include <optional>
#include <string>

#include "common/unique_fd.h"
#include "slurm/job_mapping.h"

namespace gpuledger::slurm {

class JobMappingWatch {
 public:
  explicit JobMappingWatch(std::string dir);
  // The mapping now; nullopt while the directory cannot be read (down_reason()).
  const std::optional<JobMapping>& poll();
  const std::string& down_reason() const { return down_reason_; }
  const std::string& dir() const { return dir_; }

 private:
  bool open_directory();
  bool changed();  // drains inotify; true when the directory must be read again

  std::string dir_;
  UniqueFd dirfd_, inotify_;
  std::optional<JobMapping> mapping_;
  std::string down_reason_;
};

}  // namespace gpuledger::slurm
