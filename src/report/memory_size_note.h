#pragma once
// The report's note on the slots whose windows were billed without a memory
// part because their memory size was unknown while vram_per_gib_hour was set
// (ledger/vram_price.h, Store::memory_size_unknown): the whole cost of those
// windows went by the cost policy, and the reader should know why.
#include <vector>

#include "ledger/store.h"
#include "report/report.h"

namespace gpuledger::report {

// Appends the note when `spans` (those overlapping the report's range) is not
// empty: up to five slots by name with the time each was affected (clipped to
// the range), then how many more.
void add_memory_size_note(Report& report, const std::vector<ledger::Store::MemorySizeUnknown>& spans);

}  // namespace gpuledger::report
