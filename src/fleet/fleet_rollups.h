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
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleet/fleet_periods.h"
#include "fleet/fleet_rows.h"
#include "fleet/shipped_batch.h"
#include "fleet/shipped_digests.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

struct Rollup {
  Period period = Period::kHour;
  int64_t period_start = 0;
  ledger::WindowRecord window;  // merged; its start and end are its windows' first start and last end
  int64_t windows = 0;          // the store's windows it merged
  unsigned __int128 digests = 0;  // the sum of their digest_part (fleet_rows.h), as the database sums them
};

// The merges of hours and days made so far, for the day or month that takes
// them next, kept in the store's meta table ("fleet/merge/<period>/<start>").
// Without them a month's roll-ups merged every day of the month again from
// the store, where the agent's own hourly roll-up (rollup_after_hours, 24 h by
// default) has long replaced a day's minute windows with one window an hour:
// the month no longer named the windows the database holds, and the database
// refused it (so a month's report read every GPU's days instead). Rebuilding
// was also 60 % of a shipper's CPU with a backlog (each window read and
// digested three times, docs/performance.md). A merge is released once its
// coarser period's roll-ups are committed (a failed commit builds them again
// from it), and forgotten when windows come into it after it was merged (the
// shipper's late windows). Kept across restarts; bounded (fleet_rollups.cpp):
// past its bound a period is merged from the store again.
class RollupMemo {
 public:
  struct Slot {
    Rollup rollup;
    bool mergeable = true;
  };
  using Slots = std::map<std::string, Slot>;  // by slot uuid
  // The merges of `origin`'s windows (their digests are the windows' as it
  // ships them): those kept under another cluster or node name are not used.
  RollupMemo(ledger::Store& store, Origin origin);
  // Forgets the periods that end after `t`: a window starting at `t` came
  // after they were merged.
  void forget_from(int64_t t);
  // The merges of (period, start); nullopt when not kept.
  std::optional<Slots> find(Period period, int64_t start) const;
  void keep(Period period, int64_t start, const Slots& slots);
  // The roll-ups of (period, start) are committed: its finer periods' merges
  // are not needed again.
  void release(Period period, int64_t start);
  size_t size() const { return periods_; }  // periods kept

 private:
  ledger::Store& store_;
  Origin origin_;
  size_t periods_ = 0;
};

// The period's roll-ups, one per slot with windows in it. A slot whose
// windows cannot be merged (its currency or GPU fraction changed within the
// period, or an account's labels did) has none: a report reads its finer periods.
// The digests are those of the windows as `origin` ships them.
// With `memo`, the finer periods' merges kept there are used instead of
// made again, and this period's are kept for the coarser one. With
// `shipped`, a window's digest part kept there when it was shipped (as
// `origin`) is taken instead of hashing it again. With `batch`, an hour
// whose windows are all in it is merged from them, not read again.
std::vector<Rollup> build_rollups(const ledger::Store& store, const Origin& origin, Period period, int64_t period_start,
                                  RollupMemo* memo = nullptr, ShippedDigests* shipped = nullptr,
                                  ShippedBatch* batch = nullptr);

}  // namespace gpuledger::fleet
