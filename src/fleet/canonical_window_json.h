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
#include <vector>

#include "ledger/store.h"

namespace gpuledger::fleet {

// The window, or nullopt when the text is not in the one shape above.
std::optional<ledger::WindowRecord> window_from_canonical_json(std::string_view text);

// A window row's body in the fleet database (schema 7, window_json.h's
// window_children_to_json): its accounts, charges and, when the window knows
// its energy, energy parts, in the body's order. nullopt when the text is
// not in that shape (keys "accounts", "charges" and "energy" in that order,
// each once, no other; the cells as above), or where a value reads otherwise
// through the database's views (body_accounts: a negative zero, which
// PostgreSQL's numeric reads as 0): the reader then takes the views' reading
// (fleet_reader.cpp, read_windows). So what this gives is what the views give.
struct WindowChildren {
  std::vector<ledger::AccountRecord> accounts;
  std::vector<ledger::Charge> charges;
  std::optional<std::vector<ledger::EnergyCharge>> energy;
};
std::optional<WindowChildren> window_children_from_canonical_json(std::string_view text);

}  // namespace gpuledger::fleet
