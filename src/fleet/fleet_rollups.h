#pragma once
// An agent's roll-ups for the fleet database: per GPU slot, the node's
// windows of one closed UTC hour, day or month merged into one window
// (ledger/hourly_rollup.h: money, held time and energy conserved exactly),
// with how many windows it stands for. The database keeps its own count and
// cost of the windows it holds (window_totals, fleet_schema.h); a report reads
// a roll-up instead of its windows only while both agree, so a stale or wrong
// roll-up makes a report slower, never different in money.
//
// A day is merged from its hours and a month from its days, so the agent
// holds one hour of one node's windows at a time, whatever the period.
#include <cstdint>
#include <string>
#include <vector>

#include "fleet/fleet_periods.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

struct Rollup {
  Period period = Period::kHour;
  int64_t period_start = 0;
  ledger::WindowRecord window;  // merged; its start and end are its windows' first start and last end
  int64_t windows = 0;          // the store's windows it merged
};

// The period's roll-ups, one per slot with windows in it. A slot whose
// windows cannot be merged (its currency or GPU fraction changed within the
// period) has none: a report reads its finer periods.
std::vector<Rollup> build_rollups(const ledger::Store& store, Period period, int64_t period_start);

}  // namespace gpuledger::fleet
