#pragma once
// The fleet's per-window CPU that is not the server's, timed in the bench's
// own run against the alternative it replaced (docs/performance.md, section 6):
// a roll-up body read in one pass (canonical_window_json.h) against the
// general JSON reader, and a window's digest alone against its row and digest.
#include "ledger/store.h"

namespace gpuledger::bench {

// Prints one line each for `window` (a roll-up, as a report reads it), each
// cost the median of five runs of `reads` calls, and their ratio.
void print_codec_costs(const ledger::WindowRecord& window, int reads);

}  // namespace gpuledger::bench
