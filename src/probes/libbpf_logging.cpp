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
  while (!line.empty() && line.back() == '\n') line.pop_back();
  switch (level) {
    case LIBBPF_WARN: spdlog::warn("libbpf: {}", line); break;
    case LIBBPF_INFO: spdlog::debug("libbpf: {}", line); break;
    default: spdlog::trace("libbpf: {}", line); break;
  }
  return n;
}

}  // namespace

void route_libbpf_logging() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(forward); });
}

}  // namespace gpuledger::probes
