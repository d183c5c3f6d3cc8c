#pragma once
// A roll-up's body read in one pass when it is written as window_to_json
// writes it: a month's fleet report reads 240,000 of them, and the general
// reader (json_tape.h: a tape of nodes, then each field found by its key)
// spent ~7 µs on a 1.5 KB body, the largest share of a CSV by day's client
// time (docs/performance.md, section 6).
//
// The shape is known: one object whose keys come in byte order (nlohmann's),
// no space, strings of printable ASCII without escapes, the accounts arrays of
// 23 or 25 cells, the charges [account, kind, amount]. Anything else (a key
// out of order, repeated or unknown, an escape, a byte past ASCII, a
// fraction in an integer field, a number that does not read exactly, text
// after the object) is not read here: window_from_json then reads it with
// the general reader, which gives the same window or its error. So this
// reader only ever gives what the general one gives (a test compares the two
// on every field's shapes and on mutated bodies).
#include <optional>
#include <string_view>

#include "ledger/store.h"

namespace gpuledger::fleet {

// The window, or nullopt when the text is not in the one shape above.
std::optional<ledger::WindowRecord> window_from_canonical_json(std::string_view text);

}  // namespace gpuledger::fleet
