// A short process's malloc (common/short_process_malloc.h): the heap grown by the
// reserve at once, advised for huge pages (VmFlags "hg"), and the blocks
// allocated after it come from there.
#include "common/short_process_malloc.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuledger {
namespace {

struct Mapping {
  uintptr_t from = 0, to = 0;
  bool huge_advised = false;
};

// This process's mappings advised for huge pages (/proc/self/smaps: "hg" in VmFlags).
std::vector<Mapping> advised_mappings() {
  std::vector<Mapping> out;
  std::ifstream smaps("/proc/self/smaps");
  Mapping m;
  for (std::string line; std::getline(smaps, line);) {
    if (line.rfind("VmFlags:", 0) == 0) {
      m.huge_advised = (line + " ").find(" hg ") != std::string::npos;
      if (m.huge_advised) out.push_back(m);
      continue;
    }
    const auto dash = line.find('-'), space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space &&
        line.find_first_not_of("0123456789abcdef") == dash) {
      m.from = std::stoull(line.substr(0, dash), nullptr, 16);
      m.to = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
    }
  }
  return out;
}

TEST(ShortProcessMalloc, TheHeapIsGrownByTheReserveAdvisedForHugePagesAndUsed) {
  constexpr size_t kReserve = 64 << 20;
  tune_malloc_for_a_short_process(kReserve);
  const auto advised = advised_mappings();
  const Mapping* heap = nullptr;
  for (const auto& m : advised)
    if (m.to - m.from >= kReserve - (4 << 20)) heap = &m;
  ASSERT_NE(heap, nullptr) << "no mapping of the reserve's size advised for huge pages";
  // Blocks of a report's sizes (a roll-up body, a parsed window) come from the advised heap.
  std::vector<void*> blocks;
  size_t inside = 0;
  for (int i = 0; i < 10000; ++i) {
    blocks.push_back(std::malloc(1500));
    const auto at = reinterpret_cast<uintptr_t>(blocks.back());
    inside += at >= heap->from && at < heap->to;
  }
  for (void* b : blocks) std::free(b);
  EXPECT_GE(inside, 8000u);  // the rest: free room the heap had before
}

}  // namespace
}  // namespace gpuledger
