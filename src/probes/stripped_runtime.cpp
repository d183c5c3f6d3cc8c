#include "probes/stripped_runtime.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gpuledger::probes {
namespace {

// Built at run time, so the agent's own binary does not carry the marker it
// looks for.
std::string runtime_marker() {
  std::string m = "cudaError";
  m += "InsufficientDriver";
  return m;
}

}  // namespace

bool holds_cuda_runtime_strings(int fd, size_t limit) {
  const std::string marker = runtime_marker();
  constexpr size_t kChunk = 1 << 20;
  std::vector<char> buf(kChunk + marker.size());
  size_t carried = 0;  // the tail of the previous chunk, so a marker across chunks is found
  for (off_t offset = 0; static_cast<size_t>(offset) < limit;) {
    ssize_t n = pread(fd, buf.data() + carried, kChunk, offset);
    if (n <= 0) return false;
    const size_t have = carried + static_cast<size_t>(n);
    if (std::search(buf.begin(), buf.begin() + static_cast<long>(have), marker.begin(), marker.end()) !=
        buf.begin() + static_cast<long>(have))
      return true;
    carried = std::min(have, marker.size() - 1);
    std::copy(buf.begin() + static_cast<long>(have - carried), buf.begin() + static_cast<long>(have), buf.begin());
    offset += n;
  }
  return false;
}

}  // namespace gpuledger::probes
