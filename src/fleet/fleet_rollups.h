#pragma once
// An agent's roll-ups for the fleet database: per GPU slot, the node's
// windows of one closed UTC hour, day or month merged into one window
// (ledger/hourly_rollup.h: money, held time and energy conserved exactly),
// with how many windows it stands for and the sum of their digests. The
// database keeps its own count, cost and digest sum of the windows it holds
// (window_totals, fleet_schema.h); a report reads a roll-up instead of its
// windows only while they agree, so a stale or wrong roll-up makes a report
// slower, never different in money.
//
// A day is merged from its hours and a month from its days, so the agent
// holds one hour of one node's windows at a time, whatever the period.
#include <cstdint>
#include <string>
#include <vector>

#include "fleet/fleet_periods.h"
#include "fleet/fleet_rows.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

struct Rollup {
  Period period = Period::kHour;
  int64_t period_start = 0;
  ledger::WindowRecord window;  // merged; its start and end are its windows' first start and last end
  int64_t windows = 0;          // the store's windows it merged
  unsigned __int128 digests = 0;  // the sum of their digest_part (fleet_rows.h), as the database sums them
};

// The period's roll-ups, one per slot with windows in it. A slot whose
// windows cannot be merged (its currency or GPU fraction changed within the
// period, or an account's labels did) has none: a report reads its finer periods.
// The digests are those of the windows as `origin` ships them.
std::vector<Rollup> build_rollups(const ledger::Store& store, const Origin& origin, Period period,
                                  int64_t period_start);

}  // namespace gpuledger::fleet
