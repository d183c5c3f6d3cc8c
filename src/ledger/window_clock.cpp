// The window clock (window_clock.h): which windows an observation closes.
#include "ledger/window_clock.h"

#include <algorithm>
#include <cmath>

#include "common/log.h"

namespace gpuledger::ledger {

namespace {
int64_t window_of(double t, int64_t L) { return static_cast<int64_t>(std::floor(t / static_cast<double>(L))) * L; }
}  // namespace

std::vector<int64_t> WindowClock::backfill_before(double t) const {
  const int64_t S = window_of(t, L_);
  std::vector<int64_t> backfill;
  if (stored_end_ && *stored_end_ < S) {
    int64_t from = ((*stored_end_ + L_ - 1) / L_) * L_;
    if (S - from > max_backfill_) {
      int64_t kept = std::max<int64_t>(0, (max_backfill_ / L_) * L_);
      spdlog::warn("ledger: agent was down from {} to {}; backfilling only the last {} s", from, S, kept);
      from = S - kept;
    }
    for (int64_t b = from; b < S; b += L_) backfill.push_back(b);
  }
  if (stored_end_ && *stored_end_ > S)
    spdlog::info("ledger: the window from {} was stored when the agent stopped; what is seen in the rest of it "
                 "is counted in the next window",
                 S);
  return backfill;
}

void WindowClock::open(double t) {
  const int64_t S = window_of(t, L_);
  spdlog::debug("ledger: first observation at {:.3f}, in the window from {}", t, S);
  first_time_ = t;
  window_start_ = S;
  window_first_seen_ = t;
  last_time_ = t;
}

std::optional<WindowClock::Closing> WindowClock::next_closed_by(double t, bool watched) const {
  if (!window_start_ || t < static_cast<double>(*window_start_ + L_)) return std::nullopt;
  Closing w;
  w.start = *window_start_;
  w.end = w.start + L_;
  w.from = last_time_;
  w.observed_seconds = watched ? static_cast<double>(w.end) - window_first_seen_ : 0.0;
  w.source = !watched ? "gap" : w.observed_seconds + 1e-9 < static_cast<double>(L_) ? "partial" : "live";
  // Stored by an agent that stopped within it: what was seen of the rest is
  // counted in the next window, never lost.
  w.store = !(stored_end_ && w.start < *stored_end_);
  return w;
}

void WindowClock::closed(const Closing& w) {
  window_start_ = w.end;
  window_first_seen_ = static_cast<double>(w.end);
  last_time_ = static_cast<double>(w.end);
}

std::optional<WindowClock::Closing> WindowClock::in_progress() const {
  if (!window_start_) return std::nullopt;
  const int64_t start = *window_start_;
  if (stored_end_ && start < *stored_end_) return std::nullopt;  // stored already, before a restart
  return Closing{start, start + L_, window_first_seen_, last_time_ - window_first_seen_, "partial", true};
}

}  // namespace gpuledger::ledger
