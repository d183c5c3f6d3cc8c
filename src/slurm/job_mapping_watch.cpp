#include "slurm/job_mapping_watch.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/log.h"

namespace gpuledger::slurm {

JobMappingWatch::JobMappingWatch(std::string dir) : dir_(std::move(dir)) {}

bool JobMappingWatch::open_directory() {
  UniqueFd fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    down_reason_ = "the job-mapping directory " + dir_ + " cannot be opened: " + std::strerror(errno);
    return false;
  }
  UniqueFd in(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  // Watched through the descriptor held: the directory read is the one watched.
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  constexpr uint32_t kEvents = IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO |
                               IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
  if (!in.valid() || ::inotify_add_watch(in.get(), self.c_str(), kEvents) < 0) {
    down_reason_ = "the job-mapping directory " + dir_ + " cannot be watched: " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))))
    spdlog::warn("allocation: {} is writable by others than root: whoever can write it can name any job running "
                 "here as a GPU's holder (deploy/slurm/ makes it 0755 root)",
                 dir_);
  dirfd_ = std::move(fd);
  inotify_ = std::move(in);
  return true;
}

bool JobMappingWatch::changed() {
  alignas(inotify_event) char buf[4096];
  bool any = false;
  for (;;) {
    const ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n <= 0) break;
    any = true;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      // The directory itself went (an admin's rm -r, a tmpfs remount):
      // open it again by its path on the next poll.
      if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
        dirfd_.reset();
        inotify_.reset();
        return true;
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  // Removed while held open: the kernel says IN_DELETE_SELF only once the
  // last descriptor closes, so ask the inode whether it is still linked.
  struct stat st {};
  if (any && (::fstat(dirfd_.get(), &st) != 0 || st.st_nlink == 0)) {
    dirfd_.reset();
    inotify_.reset();
  }
  return any;
}

const std::optional<JobMapping>& JobMappingWatch::poll() {
  if (dirfd_.valid() && !changed() && mapping_) return mapping_;
  const std::string was_down = down_reason_;
  if (!dirfd_.valid() && !open_directory()) {
    if (down_reason_ != was_down)  // once per outage and reason
      spdlog::warn("allocation: {}; windows are billed to __allocation_unknown__ until it can be read", down_reason_);
    mapping_.reset();
    return mapping_;
  }
  try {
    JobMapping read = read_job_mapping(dirfd_.get());
    if (read.skipped_files + read.skipped_lines > 0 &&
        (!mapping_ || mapping_->skipped_files != read.skipped_files || mapping_->skipped_lines != read.skipped_lines))
      spdlog::warn("allocation: {} skipped {} files and {} lines that are no GPU's job list (job_mapping.h)", dir_,
                   read.skipped_files, read.skipped_lines);
    mapping_ = std::move(read);
    down_reason_.clear();
  } catch (const Error& e) {
    down_reason_ = e.what();
    mapping_.reset();
    dirfd_.reset();
    inotify_.reset();
  }
  return mapping_;
}

}  // namespace gpuledger::slurm
