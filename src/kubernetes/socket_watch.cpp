#include "kubernetes/socket_watch.h"

#include <sys/inotify.h>

#include <cstring>

namespace gpuledger::kubernetes {

SocketWatch::SocketWatch(std::string socket_path) {
  const auto slash = socket_path.rfind('/');
  dir_ = slash == std::string::npos ? "." : slash == 0 ? "/" : socket_path.substr(0, slash);
  name_ = slash == std::string::npos ? socket_path : socket_path.substr(slash + 1);
  fd_ = UniqueFd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  add_watch();
}

void SocketWatch::add_watch() {
  if (fd_.valid() && wd_ < 0)
    wd_ = ::inotify_add_watch(fd_.get(), dir_.c_str(), IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR);
}

bool SocketWatch::created() {
  if (!fd_.valid()) return false;
  if (wd_ < 0) {
    add_watch();
    return false;  // the directory (and so the socket) appeared: the next poll finds it
  }
  bool seen = false;
  alignas(inotify_event) char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      if (ev->mask & (IN_DELETE_SELF | IN_IGNORED)) wd_ = -1;  // the directory went: watch it again when back
      if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && ev->len && ::strnlen(ev->name, ev->len) < ev->len &&
          name_ == ev->name)
        seen = true;
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
  return seen;
}

}  // namespace gpuledger::kubernetes
