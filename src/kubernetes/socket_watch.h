#pragma once
// Tells when a unix socket's path is (re)created: inotify on its directory
// (the kubelet's pod-resources directory is root's, not a tenant's), so that a
// kubelet coming back is read at once, not at the next poll. The directory may
// not exist yet (a node booting): the watch is added when it does. Bounded:
// one inotify descriptor, one watch, a fixed buffer drained each call.
#include <string>

#include "common/unique_fd.h"

namespace gpuledger::kubernetes {

using gpuledger::UniqueFd;

class SocketWatch {
 public:
  explicit SocketWatch(std::string socket_path);
  SocketWatch(const SocketWatch&) = delete;
  SocketWatch& operator=(const SocketWatch&) = delete;
  // Whether the socket's name was created or moved into its directory since
  // the last call (never blocks). False where inotify is unavailable.
  bool created();

 private:
  void add_watch();
  std::string dir_, name_;
  UniqueFd fd_;
  int wd_ = -1;
};

}  // namespace gpuledger::kubernetes
