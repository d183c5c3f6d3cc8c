#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <unistd.h>
#include <string>

#include "common/log.h"
#include "probes/bpf_handles.h"

namespace gpuledger::probes {
namespace {

int forward(enum libbpf_print_level level, const char* format, va_list args) {
  char buf[65536];
  int n = std::vsnprintf(buf, sizeof(buf), format, args);
  std::string line(buf, n > 0 ? std::min<size_t>(n, sizeof(buf) - 1) : 0);
  // One log line per line of the message (a verifier dump has many): the log
  // shows newlines escaped (log.h), which would fold a dump into one line.
  for (size_t start = 0; start < line.size();) {
    size_t end = line.find('\n', start);
    if (end == std::string::npos) end = line.size();
    const std::string_view part(line.data() + start, end - start);
    switch (level) {
      case LIBBPF_WARN: spdlog::warn("libbpf: {}", part); break;
      case LIBBPF_INFO: spdlog::debug("libbpf: {}", part); break;
      default: spdlog::trace("libbpf: {}", part); break;
    }
    start = end + 1;
  }
  return n;
}

}  // namespace

void route_libbpf_logging() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(forward); });
}

}  // namespace gpuledger::probes
