#include "common/short_process_malloc.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace gpuledger {

namespace {
constexpr uintptr_t kHugePage = 2 << 20;
constexpr size_t kGrowth = 16 << 20;  // a block from the heap (under the mmap threshold) that makes it grow
constexpr size_t kDefaultTopPad = 128 << 10;  // glibc's M_TOP_PAD
}  // namespace

void tune_malloc_for_a_short_process(size_t reserve) {
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * reserve + kGrowth));  // the reserve is never trimmed
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // One growth of the heap by the block and the reserve (sbrk: address
  // space only), then the usual padding again: later growth is not advised.
  mallopt(M_TOP_PAD, static_cast<int>(reserve));
  const auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  void* volatile block = malloc(kGrowth);  // volatile: the compiler may not drop the pair
  free(block);
  const auto after = reinterpret_cast<uintptr_t>(sbrk(0));
  mallopt(M_TOP_PAD, kDefaultTopPad);
  const uintptr_t from = (before + kHugePage - 1) & ~(kHugePage - 1), to = after & ~(kHugePage - 1);
  if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);  // advice: a refusal changes nothing
}

}  // namespace gpuledger
