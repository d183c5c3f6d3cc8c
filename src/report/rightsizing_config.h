#pragma once
// The `rightsizing:` section of the agent's configuration file (--config),
// read by `gpuledger report` and `gpuledger rightsize`:
//
//   rightsizing:
//     idle_after: 24h          # release a GPU held without a launch for longer (s, m, h, d)
//     vram_headroom: 0.2       # the VRAM kept above the peak, a fraction of it, 0..1
//     min_evidence: 24h        # less held time behind a recommendation states no saving (0: any)
//     mig_profiles:            # more MIG tables (ledger/mig_profiles.h), before the built-in ones
//       "A30": {slices: 4, profiles: [1g.6gb, 2g.12gb, 4g.24gb]}
//       "NVIDIA H100 80GB HBM3": [1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb]
//
// Every key is optional; unknown keys, bad durations, fractions or profile
// names are an Error naming file:line:column.
#include <string>

#include "report/rightsizing.h"

namespace gpuledger::report {

RightsizingOptions parse_rightsizing_section(const std::string& yaml_text, const std::string& source_name = "<config>");
RightsizingOptions load_rightsizing_section(const std::string& path);

// "24h", "90m", "2d", "3600" (seconds) -> seconds; throws Error naming `what`
// (idle_after, min_evidence).
int64_t parse_idle_after(const std::string& text, const std::string& what = "--idle-after");
// "0.2" -> 200000 (millionths); a decimal from 0 to 1 with at most 6 decimals.
int64_t parse_vram_headroom(const std::string& text, const std::string& what = "--vram-headroom");

}  // namespace gpuledger::report
