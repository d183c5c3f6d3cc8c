#pragma once
// Where a report or recommendation goes (-o FILE, else stdout), written so a
// mistake costs nothing: the text goes to a temporary file in the target's
// folder and is renamed over the target only when complete (never a
// half-written file), and a target that is a SQLite database (its header), a
// SQLite write-ahead log, or the ledger store being read (or its -wal, -shm or
// .lock) is refused before anything is written.
#include <functional>
#include <string>
#include <string_view>

namespace gpuledger::cli {

// Throws Error (one sentence) when the target is refused or cannot be written.
void write_output(const std::string& path, const std::string& text, const std::string& store_path);
// The same for a text made piece by piece (a FOCUS export of a fleet's month):
// `produce` gives every piece to the sink in turn. To a file, the pieces go to
// the temporary file, renamed over the target only when `produce` returned; to
// stdout or a pipe, as they come (a report that fails half-way has written its
// first part there).
using OutputSink = std::function<void(std::string_view)>;
void write_output(const std::string& path, const std::string& store_path,
                  const std::function<void(const OutputSink&)>& produce);

}  // namespace gpuledger::cli
