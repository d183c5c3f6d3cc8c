#pragma once
// A window as one JSON document and back, exactly: the body of a roll-up in
// the fleet database (fleet_rollups.h, rollups.body). Numbers are written so
// that they read back as the same double or integer (the database keeps
// the text as written), and every field a report reads is there; the node and the
// not-stored split_disagreement are not.
#include <string>
#include <string_view>

#include "ledger/store.h"

namespace gpuledger::fleet {

std::string window_to_json(const ledger::WindowRecord& window);
// Its accounts, charges and energy parts alone, as the same JSON's
// "accounts", "charges" and "energy" (the parts' array itself; absent when the
// energy is unknown): a window's body in the fleet windows table (schema 7),
// whose other fields are its columns.
std::string window_children_to_json(const ledger::WindowRecord& window);
// Throws Error when the text is not such a document. Read in one pass when
// it is as window_to_json writes it (canonical_window_json.h), else by
// window_from_any_json.
ledger::WindowRecord window_from_json(std::string_view text);
// The general reader alone: any spacing, key order, escapes and number forms
// nlohmann's parser reads (PostgreSQL's jsonb, a hand-written body).
ledger::WindowRecord window_from_any_json(std::string_view text);

}  // namespace gpuledger::fleet
