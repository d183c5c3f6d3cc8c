#pragma once
// One process at a time for a resource: an exclusive flock(2) on a lock file,
// held for the life of the object and released by the kernel however the
// process ends (SIGKILL and OOM kill included), so it never goes stale.
#include <string>

namespace gpuledger {

class FileLock {
 public:
  // Creates `path` if needed and takes the lock without waiting; throws
  // Error naming `what`, the lock file and the holder's pid when it is held.
  FileLock(const std::string& path, const std::string& what);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gpuledger
