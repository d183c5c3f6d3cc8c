#pragma once
// What one stored window adds to an account's allocated-against-used and
// carbon counters on /metrics (gpuledger_ledger_*_share_gpu_seconds_total,
// gpuledger_ledger_carbon_grams_total): the window's shares
// (allocation_use.h) times its GPU-seconds (window length x gpu_fraction), so
// that a fleet report summing an account's counters over a range gets the
// local report's share hours (report.h, Row::share_hours ...) for it.
// Pure; used by the accountant for each window it writes, and over the whole
// store when it starts (the counters continue across restarts).
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ledger/store.h"

namespace gpuledger::ledger {

struct ShareSeconds {
  double share = 0;              // window GPU-seconds where the account held or used the slot
  double allocated = 0;          // allocated share x window GPU-seconds (known shares only)
  double allocated_unknown = 0;  // window GPU-seconds where its allocated share was unknown
  double used_activity = 0, used_vram = 0, used_energy = 0;  // used share x window GPU-seconds
  // Window GPU-seconds of the windows with known busy energy (the denominator
  // of used_energy, as in the local report).
  double energy_share = 0;
  ShareSeconds& operator+=(const ShareSeconds& o);
};

// Every non-special account of the window (special accounts have no shares),
// in account order, each once. The names are views into the window: valid
// while it lives. A flat vector, not a map: a window has a handful of
// accounts, and every report adds every window's (four maps a window were 7 %
// of a fleet report's client: docs/performance.md, "The bill's builder").
class WindowShares {
 public:
  using Entry = std::pair<std::string_view, ShareSeconds>;
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  const ShareSeconds* find(std::string_view account) const;  // null: not a non-special account of the window
  ShareSeconds& operator[](std::string_view account);        // inserted in order when absent

 private:
  std::vector<Entry> entries_;
};
WindowShares share_seconds(const WindowRecord& window);

// Every account with energy in the window: its energy (busy and idle) x the
// window's carbon intensity, grams CO2e. Empty when the window's energy or
// intensity is unknown.
std::map<std::string, double> carbon_grams(const WindowRecord& window);

}  // namespace gpuledger::ledger
