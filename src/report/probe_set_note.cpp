#include "report/probe_set_note.h"

#include <algorithm>
#include <string>

#include "common/not_probed.h"
#include "report/report_text.h"

namespace gpuledger::report {

ProbedPart probed_part(const Spans& covered, const Spans& not_probed) {
  int64_t total = 0, unprobed = 0;
  for (const auto& [a, b] : covered) {
    total += b - a;
    for (const auto& [x, y] : not_probed) unprobed += std::max<int64_t>(0, std::min(b, y) - std::max(a, x));
  }
  if (total == 0 || unprobed == 0) return ProbedPart::kAll;
  return unprobed >= total ? ProbedPart::kNone : ProbedPart::kSome;
}

void add_probe_set_note(Report& report, const Spans& not_probed) {
  const ProbedPart part = probed_part(report.covered_spans, not_probed);
  if (part == ProbedPart::kAll) return;
  report.launches_not_probed = part == ProbedPart::kNone;
  std::string when;
  for (const auto& [a, b] : not_probed) {
    const int64_t x = std::max(a, report.from), y = std::min(b, report.to);
    if (x < y) when += (when.empty() ? "" : "; ") + format_date_time(x) + " to " + format_date_time(y);
  }
  report.notes.push_back(part == ProbedPart::kNone
                             ? "Launches are " + std::string(kNotProbedByBilling) +
                                   " for the whole range: NVML's per-process samples split the GPUs' time."
                             : "Launches were " + std::string(kNotProbedByBilling) + " from " + when +
                                   ": the launch counts shown cover the rest of the range only.");
}

void add_probe_set_note(Rightsizing& rightsizing, const Spans& covered, const Spans& not_probed) {
  switch (probed_part(covered, not_probed)) {
    case ProbedPart::kAll: rightsizing.idle_source = "launches"; break;
    case ProbedPart::kSome: rightsizing.idle_source = "mixed"; break;
    case ProbedPart::kNone:
      rightsizing.idle_source = "nvml";
      rightsizing.launches_not_probed = true;
      break;
  }
}

}  // namespace gpuledger::report
