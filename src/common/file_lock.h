#pragma once
// One process at a time for a resource: an exclusive flock(2) on a lock file,
// held for the life of the object and released by the kernel however the
// process ends (SIGKILL and OOM kill included), so it never goes stale.
#include <string>

#include "common/error.h"

namespace gpuledger {

// Another process holds the lock (as opposed to a lock file that cannot be
// opened or locked at all).
class LockHeld : public Error {
 public:
  using Error::Error;
};

class FileLock {
 public:
  // Creates `path` if needed and takes the lock without waiting; throws
  // LockHeld naming `what`, the lock file and the holder's pid when it is
  // held; Error when the lock file cannot be opened or locked.
  FileLock(const std::string& path, const std::string& what);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gpuledger
