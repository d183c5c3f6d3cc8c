#pragma once
// Which evidence split the busy part of the windows behind a report
// (ledger/split_source.h): per row, its busy GPU-hours by the split_source of
// the windows they came from; per report, the windows with users by source.
#include <cstdint>
#include <map>
#include <string>

namespace gpuledger::report {

// The window's split_source as reports name it: "unknown" for windows
// written before the ledger recorded it (schema < 7).
std::string split_source_name(const std::string& stored);

// "nvml" or "nvml+spans": the sources with any hours, most hours first.
std::string split_source_cell(const std::map<std::string, double>& busy_hours_by_source);

// "nvml 10, spans 2 of 12 windows with users": the windows with users by the
// evidence that split them, best evidence first; "" when no window had users.
std::string split_source_summary(const std::map<std::string, int64_t>& windows_by_source);

}  // namespace gpuledger::report
