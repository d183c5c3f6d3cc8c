// Counter deltas (counter_deltas.h): each workload's growth since the last
// observation, spread over its streams and onto the slots of the open window.
#include "ledger/counter_deltas.h"

#include <algorithm>

#include "common/counter_delta.h"
#include "common/largest_remainder.h"
#include "common/log.h"
#include "common/utf8.h"

namespace gpuledger::ledger {

namespace {

// Which slots a workload's activity goes to: those it uses, else those it
// holds, else the node's only one.
std::vector<std::string> slots_of(const WorkloadUsage& w, const HeldSlots& held, const Observation& obs) {
  std::vector<std::string> s = w.slots;
  if (s.empty())
    if (auto it = held.find(w.account); it != held.end()) s = it->second;
  if (s.empty() && obs.slots.size() == 1) s = {obs.slots[0].uuid};
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

}  // namespace

HeldSlots held_slots(const Observation& obs) {
  HeldSlots held;
  for (const auto& h : obs.holders) held[h.account].push_back(h.slot_uuid);
  return held;
}

Streams streams_of(const WorkloadUsage& w, const HeldSlots& held, const Observation& obs) {
  Streams out;
  double busy = w.busy_seconds;
  uint64_t launches = w.launches, live = w.live_bytes;
  for (const auto& [uuid, u] : w.by_slot) {
    out.push_back({uuid, {u.busy_seconds, u.launches, u.live_bytes, {uuid}}});
    busy -= u.busy_seconds;
    launches -= std::min(launches, u.launches);
    live -= std::min(live, u.live_bytes);
  }
  out.push_back({"", {std::max(0.0, busy), launches, live, slots_of(w, held, obs)}});
  return out;
}

bool CounterDeltas::take_baseline(const Observation& obs, std::optional<CounterBaseline> stored) {
  restored_.clear();
  const bool stored_set = stored && !stored->counter_set.empty();
  if (!stored_set || stored->counter_set != counter_set_) {
    if (stored_set)
      spdlog::info("ledger: the kernel counters are not those of the stored baseline ({}), they started again: "
                   "usage before the first observation is not charged",
                   counter_set_.empty() ? "they are not pinned" : "another counter set");
    charge_up_to(obs);
    return false;
  }
  restored_ = std::move(stored->accounts);
  spdlog::info("ledger: took over the counter baseline of the last stored window ({} accounts): what was counted "
               "since is charged in the first window",
               restored_.size());
  charged_ = restored_;
  return true;
}

// What the stored and pending windows cover: this observation's counters,
// and the baseline of accounts not seen since a restart.
void CounterDeltas::charge_up_to(const Observation& obs) {
  charged_ = restored_;
  for (const auto& w : obs.workloads) charged_[valid_utf8(w.account)] = {w.busy_seconds, w.launches};
}

void CounterDeltas::add(const Observation& obs, const HeldSlots& held, const ActivityOf& activity_of) {
  for (const auto& w : obs.workloads) add_workload_delta(w, streams_of(w, held, obs), activity_of);
  charge_up_to(obs);
}

void CounterDeltas::remember(const Observation& obs, const HeldSlots& held) {
  std::map<std::pair<std::string, std::string>, StreamReading> next;
  std::map<std::string, StreamReading> next_totals;
  for (const auto& w : obs.workloads) {
    for (auto& [slot, st] : streams_of(w, held, obs)) next[{w.account, slot}] = st;
    next_totals[w.account] = {w.busy_seconds, w.launches, w.live_bytes, {}};
  }
  streams_ = std::move(next);
  totals_ = std::move(next_totals);
}

void CounterDeltas::forget_unseen_baseline(const Observation& obs, double first_time, double window_seconds) {
  if (restored_.empty() || obs.time - first_time <= window_seconds) return;
  spdlog::info("ledger: {} account(s) of the stored baseline were not seen again since the restart (retired)",
               restored_.size());
  restored_.clear();
  charge_up_to(obs);
}

// A workload's delta is taken on its totals, which only a reset makes go
// backwards; the split between its streams is not stable (a by_gpu entry
// gets its GPU labels late, or loses them), so a stream going down is
// activity moved to another stream, not a reset. The workload's delta is
// spread over its streams in proportion to their growth (decreases count
// as 0), so nothing is counted twice or lost.
void CounterDeltas::add_workload_delta(const WorkloadUsage& w, const Streams& streams, const ActivityOf& activity_of) {
  auto tot = totals_.find(w.account);
  double prev_busy_total = tot == totals_.end() ? 0 : tot->second.busy_seconds;
  uint64_t prev_launch_total = tot == totals_.end() ? 0 : tot->second.launches;
  if (tot == totals_.end() && !restored_.empty()) {
    // First seen since the restart: charged up to the stored baseline.
    if (auto r = restored_.find(valid_utf8(w.account)); r != restored_.end()) {
      prev_busy_total = r->second.busy_seconds;
      prev_launch_total = r->second.launches;
      restored_.erase(r);
      if (w.launches < prev_launch_total || w.busy_seconds + 1e-9 < prev_busy_total)
        spdlog::warn("ledger: the counters of {} are below the stored baseline: counted from 0", w.account);
    }
  }
  const CounterDelta<double> busy = counter_delta(prev_busy_total, w.busy_seconds);
  const CounterDelta<uint64_t> launches = counter_delta(prev_launch_total, w.launches);
  if (busy.delta <= 1e-12 && launches.delta == 0) return;

  const StreamParts parts = spread_over_streams(busy.delta, launches.delta,
                                                stream_growth(w.account, streams, busy.reset, launches.reset));
  bool unattributed = false;
  for (size_t k = 0; k < streams.size(); ++k) {
    if (parts.busy[k] <= 1e-12 && parts.launches[k] == 0) continue;
    const auto& s = streams[k].second.slots;
    if (s.empty()) {
      unattributed = true;
      continue;
    }
    const uint64_t n = s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      Activity& a = activity_of(s[i], w.account);
      a.busy_seconds += parts.busy[k] / static_cast<double>(n);
      a.launches += parts.launches[k] / n + (i < parts.launches[k] % n ? 1 : 0);
    }
  }
  if (unattributed) ++unattributed_;
}

// Growth of each stream since the last observation (after a reset: all of it).
CounterDeltas::StreamParts CounterDeltas::stream_growth(const std::string& account, const Streams& streams,
                                                        bool busy_reset, bool launch_reset) const {
  StreamParts grow{std::vector<double>(streams.size(), 0), std::vector<uint64_t>(streams.size(), 0)};
  for (size_t k = 0; k < streams.size(); ++k) {
    const auto& [slot, cur] = streams[k];
    auto it = streams_.find({account, slot});
    const double pb = busy_reset || it == streams_.end() ? 0 : it->second.busy_seconds;
    const uint64_t pl = launch_reset || it == streams_.end() ? 0 : it->second.launches;
    grow.busy[k] = std::max(0.0, cur.busy_seconds - pb);
    grow.launches[k] = cur.launches > pl ? cur.launches - pl : 0;
  }
  return grow;
}

// The workload's deltas over its streams in proportion to their growth;
// launches whole, by largest remainder (common/largest_remainder.h).
CounterDeltas::StreamParts CounterDeltas::spread_over_streams(double dbusy_total, uint64_t dl_total, StreamParts grow) {
  double sum_busy = 0;
  for (double g : grow.busy) sum_busy += g;
  // No stream grew (inconsistent input): the rest stream takes it.
  if (sum_busy <= 0) {
    grow.busy.back() = 1;
    sum_busy = 1;
  }
  if (std::all_of(grow.launches.begin(), grow.launches.end(), [](uint64_t g) { return g == 0; }))
    grow.launches.back() = 1;
  StreamParts out{std::vector<double>(grow.busy.size()), apportion(dl_total, grow.launches)};
  for (size_t k = 0; k < grow.busy.size(); ++k) out.busy[k] = dbusy_total * grow.busy[k] / sum_busy;
  return out;
}

}  // namespace gpuledger::ledger
