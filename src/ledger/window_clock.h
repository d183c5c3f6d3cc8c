#pragma once
// The window clock: windows are [k*L, (k+1)*L) in Unix seconds; a window
// closes at the first observation at or after its end. It says which windows
// an observation closes, with what source and how much of each was watched:
//  * "live": watched from its start; "partial": the agent (re)started within
//    it, or it is stored at a graceful stop with what was seen of it;
//  * "gap": observations further apart than a window (the agent stalled): the
//    windows after the first one closed at once had no observation inside;
//  * "backfill": the whole windows between the store's last window end and
//    the window of the first observation (the agent was down), up to
//    max_backfill_seconds; older gaps stay gaps (logged).
// A window the store already has (an agent stopped within it) is not written
// again: what is seen of its rest is counted in the next window.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::ledger {

class WindowClock {
 public:
  // `stored_end`: the end of the store's last window (Store::last_window_end).
  WindowClock(int64_t window_seconds, int64_t max_backfill_seconds, std::optional<int64_t> stored_end)
      : L_(window_seconds), max_backfill_(max_backfill_seconds), stored_end_(stored_end) {}

  // A window that an observation closes. Its readings run from `from` (the
  // last observation, or its start) to `end`.
  struct Closing {
    int64_t start = 0, end = 0;
    double from = 0;
    double observed_seconds = 0;
    std::string source;  // live | partial | gap
    bool store = true;   // false: the store has it already
    bool operator==(const Closing&) const = default;
  };

  bool started() const { return window_start_.has_value(); }
  // Before the first observation, at `t`: the starts of the windows to write
  // as "backfill", in order (the agent was down). Then open(t).
  std::vector<int64_t> backfill_before(double t) const;
  // The first observation, at `t`, opens its window.
  void open(double t);
  // An observation at `t` before the last one (the clock went back): wait for it.
  bool went_back(double t) const { return t < last_time_; }
  // The next window an observation at `t` closes, if any; `watched`: the
  // first one it closes (the later ones had no observation inside: "gap").
  // Call closed() once it is written, then ask again.
  std::optional<Closing> next_closed_by(double t, bool watched) const;
  void closed(const Closing& w);
  // The observation at `t` was taken in.
  void seen(double t) { last_time_ = t; }
  // Graceful stop: the window in progress as "partial" with what was seen of
  // it; nullopt before the first observation or when the store has it. Call
  // stored() once it is written.
  std::optional<Closing> in_progress() const;
  void stored(const Closing& w) { stored_end_ = w.end; }

  double first_time() const { return first_time_; }
  double last_time() const { return last_time_; }

 private:
  const int64_t L_;
  const int64_t max_backfill_;
  std::optional<int64_t> stored_end_;
  std::optional<int64_t> window_start_;
  double first_time_ = 0;
  double window_first_seen_ = 0;
  double last_time_ = 0;
};

}  // namespace gpuledger::ledger
