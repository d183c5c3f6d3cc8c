#pragma once
// The window closer: turns the integrated slots of a window that ended into
// WindowRecords and writes them. For each slot of the inventory: the device
// data's verdict (suspect values dropped: unknown, never 0 %), the holders
// (without an allocation source, the users in equal parts), the price with
// the slot's rate remainder carried (rate_remainder.h), account_window(), and
// allocation against use. Every slot's window and the counter baseline go to
// the store in one transaction; the windows written feed LedgerMetrics; the
// caveats of prices and memory sizes are logged once. At most once an hour it
// applies retention and the hourly roll-up (PriceBook::retention_days,
// rollup_after_hours).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ledger/account_window.h"
#include "ledger/ledger_metrics.h"
#include "ledger/observation.h"
#include "ledger/prices.h"
#include "ledger/rate_remainder.h"
#include "ledger/slot_integrator.h"
#include "ledger/store.h"
#include "ledger/vram_price.h"

namespace gpuledger::ledger {

// A window to write: its bounds, how much of it was watched, and its source
// (live | partial | gap | backfill: window_clock.h).
struct ClosingWindow {
  int64_t start = 0, end = 0;
  double observed_seconds = 0;
  std::string source;
};

// What the agent last saw, that the window is written with.
struct LastSeen {
  const std::vector<GpuSlot>& inventory;
  const std::vector<HolderEntry>& holders;
  bool allocation_known = true;
  // The accounts' names; an account of the window without one gets an empty entry.
  std::map<std::string, AccountLabels>& labels;
  CounterBaseline baseline;  // what the window's counts are charged up to
};

class WindowCloser {
 public:
  // Loads the rate remainders the store carries.
  WindowCloser(Store& store, const PriceBook& prices, LedgerMetrics& metrics);
  // Writes `w` for every slot of `seen.inventory` from `slots` (not reset here).
  void close(const ClosingWindow& w, const LastSeen& seen, SlotIntegrator& slots);

 private:
  WindowRecord slot_record(const ClosingWindow& w, const LastSeen& seen, SlotIntegrator& slots, const GpuSlot& slot,
                           bool& memory_size_unknown);
  // The cross-checks' verdict on the slot's window, with the suspect values dropped from `in`.
  DeviceVerdict judge_device(const std::string& uuid, IntegratedSlot& in, SlotIntegrator& slots);
  // The window's seconds of use without allocation and allocation without
  // use, into its account records (adding those that only used the slot). A
  // holder the probes or NVML's samples saw work on the slot in the window
  // has no allocation without use in it (the device side missed it).
  static void record_use(const IntegratedSlot& in, const std::map<std::string, AccountLabels>& labels,
                         WindowRecord& rec);
  void log_memory_share(const GpuSlot& slot, const MemoryShare& share, std::optional<double> capacity_bytes,
                        const std::string& source);
  // Stores the spans of the windows just written whose slot's memory size was
  // unknown (Store::note_memory_size_unknown), for the reports' notes.
  void note_memory_size_unknown(const std::vector<WindowRecord>& records, const std::vector<bool>& inserted,
                                const std::vector<bool>& unknown);
  void note_probe_set(const ClosingWindow& w, const std::vector<bool>& inserted, bool launches_probed);
  void prune(int64_t start);

  Store& store_;
  const PriceBook& prices_;
  LedgerMetrics& metrics_;
  RateRemainders rate_remainders_;  // each slot's rounding carried into its next window
  int64_t last_prune_ = 0;
  // Warnings already logged: a slot priced at 0 (its uuid), suspect data ("suspect:...").
  std::set<std::string> warned_once_;
  // vram_per_gib_hour caveats already logged: "model:<name>" (memory share
  // capped at 1), "slot:<uuid>" (memory size unknown: no memory part),
  // "backfill" (windows of time the agent was down: no memory reading).
  std::set<std::string> memory_price_logged_;
};

}  // namespace gpuledger::ledger
