#pragma once
// Where a report or recommendation goes (-o FILE, else stdout), written so a
// mistake costs nothing: the text goes to a temporary file in the target's
// folder and is renamed over the target only when complete (never a
// half-written file), and a target that is a SQLite database (its header), a
// SQLite write-ahead log, or the ledger store being read (or its -wal, -shm or
// .lock) is refused before anything is written.
#include <string>

namespace gpuledger::cli {

// Throws Error (one sentence) when the target is refused or cannot be written.
void write_output(const std::string& path, const std::string& text, const std::string& store_path);

}  // namespace gpuledger::cli
