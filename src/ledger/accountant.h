#pragma once
// The window loop: turns what the agent sees (Observation) into accounted
// windows in the store, and exports the ledger's counters on /metrics. It
// orchestrates pieces with one job each: WindowClock, CounterDeltas,
// SlotIntegrator, WindowCloser, LedgerMetrics. The contract (window bounds,
// deltas, gaps, restart, graceful stop, retention) is in docs/ledger.md,
// "The window loop".
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ledger/account_window.h"
#include "ledger/counter_deltas.h"
#include "ledger/ledger_metrics.h"
#include "ledger/observation.h"
#include "ledger/prices.h"
#include "ledger/slot_integrator.h"
#include "ledger/store.h"
#include "ledger/window_clock.h"
#include "ledger/window_closer.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::ledger {

class Accountant : public metrics::MetricsContributor {
 public:
  Accountant(Store& store, PriceBook prices, int64_t max_backfill_seconds = 86400);
  Accountant(const Accountant&) = delete;  // its pieces hold references to its members
  Accountant& operator=(const Accountant&) = delete;
  void observe(const Observation& obs);
  // The per-account series of an account neither live, nor holding a GPU,
  // nor charged for this long leave /metrics (series_retirement.h; the agent's
  // --retire-after); their totals stay in the store. <= 0: never (default).
  void retire_series_after(double seconds);
  // Graceful stop: writes the window in progress now, with what was observed
  // of it up to the last observation (source "partial"). Call observe() with
  // a last observation first.
  void store_window_in_progress();
  // The identity of the kernel counter set the observations read (empty: not
  // one that outlives the agent). Call before the first observation.
  void set_counter_set(std::string id) { deltas_.set_counter_set(std::move(id)); }
  // The thresholds of the device data's cross-checks (device_quality.h).
  void set_device_checks(const DeviceCheckConfig& config) { slots_.set_device_checks(config); }
  // Writes the metrics families (gpuledger_cost_total, ...). Thread-safe.
  void write_metrics(metrics::ExpositionWriter& out) const override;
  uint64_t windows_written() const;
  uint64_t unattributed_workloads() const { return deltas_.unattributed(); }
  const PriceBook& prices() const { return prices_; }

 private:
  // The stages of observe() (accountant.cpp), in the order it runs them.
  void first_observation(const Observation& obs, const HeldSlots& held);
  // The counter deltas since the last observation into the open window.
  void add_deltas(const Observation& obs, const HeldSlots& held);
  void remember(const Observation& obs, const HeldSlots& held);
  void close_window(int64_t start, double observed_seconds, const std::string& source);
  void add_process_sm(const Observation& obs);

  Store& store_;
  PriceBook prices_;
  LedgerMetrics metrics_;  // the /metrics families, fed from the windows written
  WindowClock clock_;
  CounterDeltas deltas_;
  SlotIntegrator slots_;  // the open window's readings, by slot
  WindowCloser closer_;
  // What the last observation saw: the windows it closes are written with these.
  std::vector<HolderEntry> holders_;
  std::vector<GpuSlot> inventory_;
  bool allocation_known_ = true;
  std::map<std::string, AccountLabels> labels_;
};

}  // namespace gpuledger::ledger
