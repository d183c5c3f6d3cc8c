#pragma once
// What a report and rightsizing say of the windows the node billed under the
// billing probe set (ledger Store::hot_path_not_probed): no launch was probed
// then, so their launch counts are not counts. A range that ran under billing
// throughout shows launches as "not probed (probe set billing)"; one that did
// in part says when, in a note; rightsizing names where its idle runs came
// from (NVML's per-process samples under billing, launches otherwise).
#include <cstdint>
#include <utility>
#include <vector>

#include "report/report.h"
#include "report/rightsizing.h"

namespace gpuledger::report {

using Spans = std::vector<std::pair<int64_t, int64_t>>;

// How much of the windows' spans (`covered`, merged, in order) lies in `not_probed`.
enum class ProbedPart { kAll, kSome, kNone };
ProbedPart probed_part(const Spans& covered, const Spans& not_probed);

void add_probe_set_note(Report& report, const Spans& not_probed);
void add_probe_set_note(Rightsizing& rightsizing, const Spans& covered, const Spans& not_probed);

}  // namespace gpuledger::report
