#pragma once
// Counter deltas: what each workload's cumulative counters (busy seconds,
// launches) grew by since the last observation, put on the slots of the open
// window, so no count is lost or repeated. One reset rule
// (common/counter_delta.h): a workload total that goes backwards (its map
// entries were recreated, the agent restarted) restarts from 0.
//
// Deltas are taken on the workload's totals, never on the per-slot parts: the
// agent may learn (or lose) the GPU of some of its counts between two
// observations, moving them between by_slot and the rest; the workload's delta
// is spread over those streams in proportion to their growth (decreases count
// as 0; launches whole, by largest remainder). A stream's activity goes to its
// slots (the rest: WorkloadUsage::slots, else the slots the workload holds,
// else the node's only one), divided evenly; a delta with no slot is not
// attributed and counted in unattributed().
//
// The restart baseline: what the stored windows were charged up to, per
// account (CounterBaseline, stored with each window). When the agent adopted
// the same kernel counter set, the first observation is charged against it
// (take_baseline); an account of it not seen again within a window was
// retired and is forgotten (forget_unseen_baseline).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ledger/observation.h"
#include "ledger/window_split.h"

namespace gpuledger::ledger {

using HeldSlots = std::map<std::string, std::vector<std::string>>;  // by account: the slots it holds
HeldSlots held_slots(const Observation& obs);

// A cumulative reading of one of a workload's streams, and the slots it goes to.
struct StreamReading {
  double busy_seconds = 0;
  uint64_t launches = 0;
  uint64_t live_bytes = 0;
  std::vector<std::string> slots;
};
// A workload's usage as streams: one per known slot (by_slot), plus the rest
// ("") on the slots it uses, else holds, else the node's only one.
using Streams = std::vector<std::pair<std::string, StreamReading>>;
Streams streams_of(const WorkloadUsage& w, const HeldSlots& held, const Observation& obs);

class CounterDeltas {
 public:
  // Where a delta goes: `account`'s activity on `slot` in the open window.
  using ActivityOf = std::function<Activity&(const std::string& slot, const std::string& account)>;

  // The identity of the kernel counter set the observations read (empty: not
  // one that outlives the agent).
  void set_counter_set(std::string id) { counter_set_ = std::move(id); }
  // At the first observation: adopts the `stored` baseline when it is this
  // counter set's (true: add() the observation to charge what was counted
  // since), else the observation's counters are the baseline (logged).
  bool take_baseline(const Observation& obs, std::optional<CounterBaseline> stored);
  // The deltas since the last remembered readings, onto `activity_of`; what
  // is charged then covers `obs`.
  void add(const Observation& obs, const HeldSlots& held, const ActivityOf& activity_of);
  // `obs`'s readings are those the next deltas are taken from.
  void remember(const Observation& obs, const HeldSlots& held);
  // Forgets the stored baseline's accounts not seen again once `obs` is more
  // than `window_seconds` after `first_time` (they were retired).
  void forget_unseen_baseline(const Observation& obs, double first_time, double window_seconds);
  // What the stored and pending windows are charged up to (stored with them).
  CounterBaseline baseline() const { return CounterBaseline{counter_set_, charged_}; }
  // The last readings, by (account, slot or "" for the rest).
  const std::map<std::pair<std::string, std::string>, StreamReading>& streams() const { return streams_; }
  // The account was in the last remembered observation.
  bool live(const std::string& account) const { return totals_.contains(account); }
  // Deltas that had no slot to go to.
  uint64_t unattributed() const { return unattributed_; }

 private:
  struct StreamParts {
    std::vector<double> busy;
    std::vector<uint64_t> launches;
  };
  void charge_up_to(const Observation& obs);
  void add_workload_delta(const WorkloadUsage& w, const Streams& streams, const ActivityOf& activity_of);
  StreamParts stream_growth(const std::string& account, const Streams& streams, bool busy_reset,
                            bool launch_reset) const;
  static StreamParts spread_over_streams(double dbusy_total, uint64_t dl_total, StreamParts grow);

  std::string counter_set_;
  // The stored baseline's accounts not observed since the restart (keys as
  // stored: valid UTF-8), and what every stored or pending count covers.
  std::map<std::string, CounterBaseline::Counters> restored_;
  std::map<std::string, CounterBaseline::Counters> charged_;
  std::map<std::pair<std::string, std::string>, StreamReading> streams_;  // (account, slot or "")
  std::map<std::string, StreamReading> totals_;  // by account: its totals (deltas are taken on these)
  uint64_t unattributed_ = 0;
};

}  // namespace gpuledger::ledger
