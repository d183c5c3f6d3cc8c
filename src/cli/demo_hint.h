#pragma once
// The demo's closing hint: the report command that reads its ledger back. The
// range is written in RFC 3339 (UTC), which `report --from/--to` accept, so a
// reader sees when the demo ran rather than two Unix timestamps.
#include <cstdint>
#include <string>

namespace gpuledger::cli {

// "The ledger is in STORE: try\n  BINARY report --store STORE --from ISO --to ISO ...\n".
std::string demo_report_hint(const std::string& binary, const std::string& store, int64_t from, int64_t to);

}  // namespace gpuledger::cli
