// The counter deltas of observe() (accountant.h): what each workload's
// cumulative counters grew by since the last observation, spread over its
// streams and onto the slots of the open window.
#include "ledger/accountant.h"

#include <algorithm>

#include "common/counter_delta.h"
#include "common/largest_remainder.h"
#include "common/log.h"
#include "common/utf8.h"

namespace gpuledger::ledger {

namespace {

// Which slots a workload's activity goes to: those it uses, else those it
// holds, else the node's only one.
std::vector<std::string> slots_of(const WorkloadUsage& w, const std::map<std::string, std::vector<std::string>>& held,
                                  const Observation& obs) {
  std::vector<std::string> s = w.slots;
  if (s.empty())
    if (auto it = held.find(w.account); it != held.end()) s = it->second;
  if (s.empty() && obs.slots.size() == 1) s = {obs.slots[0].uuid};
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

}  // namespace

Accountant::Streams Accountant::streams_of(const WorkloadUsage& w, const HeldSlots& held, const Observation& obs) {
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

// What the stored and pending windows cover: this observation's counters,
// and the baseline of accounts not seen since a restart.
void Accountant::charge_up_to(const Observation& obs) {
  charged_ = restored_;
  for (const auto& w : obs.workloads) charged_[valid_utf8(w.account)] = {w.busy_seconds, w.launches};
}

// Counter deltas since the last observation go to the window open then.
void Accountant::add_deltas(const Observation& obs, const HeldSlots& held) {
  add_process_sm(obs);
  for (const auto& w : obs.workloads) add_workload_delta(w, streams_of(w, held, obs));
  charge_up_to(obs);
}

// A workload's delta is taken on its totals, which only a reset makes go
// backwards; the split between its streams is not stable (a by_gpu entry
// gets its GPU labels late, or loses them), so a stream going down is
// activity moved to another stream, not a reset. The workload's delta is
// spread over its streams in proportion to their growth (decreases count
// as 0), so nothing is counted twice or lost.
void Accountant::add_workload_delta(const WorkloadUsage& w, const Streams& streams) {
  auto tot = workload_totals_.find(w.account);
  double prev_busy_total = tot == workload_totals_.end() ? 0 : tot->second.busy_seconds;
  uint64_t prev_launch_total = tot == workload_totals_.end() ? 0 : tot->second.launches;
  if (tot == workload_totals_.end() && !restored_.empty()) {
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
      Activity& a = slots_[s[i]].activity[w.account];
      a.busy_seconds += parts.busy[k] / static_cast<double>(n);
      a.launches += parts.launches[k] / n + (i < parts.launches[k] % n ? 1 : 0);
    }
  }
  if (unattributed) ++unattributed_;
}

// Growth of each stream since the last observation (after a reset: all of it).
Accountant::StreamParts Accountant::stream_growth(const std::string& account, const Streams& streams, bool busy_reset,
                                                  bool launch_reset) const {
  StreamParts grow{std::vector<double>(streams.size(), 0), std::vector<uint64_t>(streams.size(), 0)};
  for (size_t k = 0; k < streams.size(); ++k) {
    const auto& [slot, cur] = streams[k];
    auto it = accounts_.find({account, slot});
    const double pb = busy_reset || it == accounts_.end() ? 0 : it->second.busy_seconds;
    const uint64_t pl = launch_reset || it == accounts_.end() ? 0 : it->second.launches;
    grow.busy[k] = std::max(0.0, cur.busy_seconds - pb);
    grow.launches[k] = cur.launches > pl ? cur.launches - pl : 0;
  }
  return grow;
}

// The workload's deltas over its streams in proportion to their growth;
// launches whole, by largest remainder (common/largest_remainder.h).
Accountant::StreamParts Accountant::spread_over_streams(double dbusy_total, uint64_t dl_total, StreamParts grow) {
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
