#pragma once
// malloc for a short process that allocates and frees much: a fleet report
// (a 10,000-node month: 80,000 roll-up bodies received, parsed and billed).
#include <cstddef>

namespace gpuledger {

// Sets glibc's malloc for it, in the main arena (where libpq's results and
// the bill live):
// - keeps what it frees (M_TRIM_THRESHOLD): the reader's workers parse the
//   bodies the bill frees, and glibc gave that heap back to the kernel and
//   faulted it in again page by page (7x the faults of a 1,000-node month's
//   CSV by day);
// - keeps blocks under 32 MiB in the heap (M_MMAP_THRESHOLD): setting the
//   trim threshold pins glibc's mmap threshold at 128 KiB, and every larger
//   block (a FOCUS read's windows, a page's parsed bodies) was a fresh
//   mapping faulted in and unmapped again (FOCUS daily: 48,000-65,000 faults
//   against 19,000-20,000);
// - grows the heap by `reserve` bytes of address space now and asks the
//   kernel for transparent huge pages there (madvise), so it is faulted in
//   2 MiB at a time (a 10,000-node month's table: 29,000 faults, ~10 % of its
//   time on a VM; docs/performance.md, "Huge pages"). A kernel with THP off
//   ignores the advice; the reserve costs memory only where it is used.
void tune_malloc_for_a_short_process(size_t reserve);

}  // namespace gpuledger
