#pragma once
// A fleet report's cost over time from the server (fleet schema 6): the chart
// of a JSON or HTML report needs each day's (or hour's) cost by team, which
// the database sums from the charges of its verified roll-ups
// (gpuledger.rollup_charges), so the report can read the range's rows at
// months. The same money to the micro-unit as the roll-ups' (docs/fleet-db.md,
// *The chart from the server*).
#include <cstdint>
#include <optional>

#include "fleet/fleet_periods.h"
#include "fleet/fleet_reader.h"
#include "report/report.h"

namespace gpuledger::fleet {

class PgConnection;

// The costs of the range's whole periods of `period` (an hour or a day), by
// each period's first window start and team, as ReportBuilder::add would
// count them from those periods' roll-ups. nullopt when the range has no
// whole period of that length, or when a GPU's period there has no verified
// roll-up that matches the windows the database holds: the caller reads the
// periods instead. In the caller's snapshot (FleetSnapshot), else its own.
std::optional<report::ChartCosts> read_chart_costs(PgConnection& db, int64_t from, int64_t to,
                                                   const FleetFilter& filter, Period period);

}  // namespace gpuledger::fleet
