#pragma once
// A fleet report is a short process that allocates and frees much (a
// 10,000-node month: 80,000 roll-up bodies received, parsed and billed), and
// faulted its heap in 4 KiB at a time: 29,000 faults, a tenth of its time on
// a VM. glibc (2.35 and later) puts malloc's heap in transparent huge pages
// when the tunable glibc.malloc.hugetlb=1 is set at start, which only the
// environment can do: the process restarts itself with it (6,000-7,000
// faults, the table of that month a median 1.98 s -> 1.72 s over seven
// pairs; docs/performance.md, "Huge pages"). Older glibc and a kernel with
// transparent huge pages off ignore it.
#include <optional>
#include <string>

namespace gpuledger {

// What GLIBC_TUNABLES should be for the restart, given its value now
// (nullptr: unset); nullopt when it is set already (the caller's choice is
// kept, glibc.malloc.hugetlb=0 turns this off).
std::optional<std::string> huge_page_malloc_tunables(const char* current);

// Executes this program again (/proc/self/exe, the same arguments, the same
// process id) with those tunables; returns only when it does not: set
// already, or the arguments or the executable cannot be had (then nothing
// changed).
void restart_with_huge_page_malloc();

}  // namespace gpuledger
