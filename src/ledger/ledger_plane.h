#pragma once
// The ledger as a plane of its own: a store that is full, corrupt, read-only
// or busy degrades the ledger only. Attribution, the device plane and /metrics
// go on; the ledger says why (gpuledger_ledger_up, gpuledger_ledger_errors_total
// {reason}, the /healthz body) and tries again with backoff (first_retry,
// doubling up to max_retry). When it opens again, the accountant restarts
// from the store (docs/ledger.md, "The window loop": the windows it missed are backfilled once).
// A store that failed to open is up once it opens; one that failed a write
// (full, read-only, busy) is up again once a window was written to it.
//
// Another agent holding the store's lock is not a fault to wait out: the
// constructor throws LockHeld (common/file_lock.h), so a second agent refuses
// to start.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/file_lock.h"
#include "ledger/accountant.h"
#include "ledger/prices.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::ledger {

// The failure classes of gpuledger_ledger_errors_total{reason}.
inline constexpr const char* kLedgerErrorReasons[] = {"full", "read_only", "corrupt", "busy", "other"};
// The class of a store failure, from its message (SQLite's and the system's
// own wording: "database or disk is full", "Read-only file system", ...).
std::string ledger_error_reason(const std::string& message);

struct LedgerPlaneOptions {
  std::string store_path;
  PriceBook prices;
  std::chrono::milliseconds first_retry{std::chrono::seconds(1)};
  std::chrono::milliseconds max_retry{std::chrono::minutes(5)};
  // Ledger series of gone accounts leave /metrics after this (the agent's
  // --retire-after; Accountant::retire_series_after); 0: never.
  std::chrono::milliseconds retire_series_after{0};
  // The device data's cross-checks (--config's `device_checks:`, device_quality.h).
  DeviceCheckConfig device_checks{};
  // Recorded in the store for the bills (bill_inputs.h); empty: not recorded.
  std::string node{}, cluster{};
};

class LedgerPlane : public metrics::MetricsContributor {
 public:
  using Clock = std::chrono::steady_clock;
  // Takes the store's lock and opens the store; throws LockHeld when another
  // process holds the lock. Any other failure leaves the ledger degraded.
  explicit LedgerPlane(LedgerPlaneOptions options, Clock::time_point now = Clock::now());
  ~LedgerPlane() override;

  // Feeds the accountant, or tries the store again when its backoff is over.
  // Never throws for a store failure.
  void observe(const Observation& obs, Clock::time_point now = Clock::now());
  // Graceful stop (docs/ledger.md, "The window loop"): the window in progress, if the store is up.
  void store_window_in_progress();
  // The identity of the kernel counters observed (Accountant::set_counter_set),
  // for this accountant and any the store is reopened with. Before observe().
  void set_counter_set(const std::string& id);

  struct Status {
    bool up = false;
    std::string reason;  // why not, with the retry; empty when up
  };
  Status status(Clock::time_point now = Clock::now()) const;
  void write_metrics(metrics::ExpositionWriter& out) const override;

 private:
  struct Open;  // the store and its accountant, together
  void try_open(Clock::time_point now);
  void degrade(const std::string& message, Clock::time_point now, bool writing = false);
  void recovered_locked();  // mu_ held
  bool up_locked() const;   // mu_ held

  LedgerPlaneOptions options_;
  std::unique_ptr<FileLock> lock_;
  std::chrono::milliseconds backoff_;
  Clock::time_point next_attempt_{};
  mutable std::mutex mu_;        // guards what the HTTP threads read below
  std::shared_ptr<Open> open_;   // null while degraded
  bool failed_writing_ = false;  // the last failure was a write: up again after a window is written
  std::string last_error_;
  std::string counter_set_;
  std::map<std::string, uint64_t> errors_;
};

}  // namespace gpuledger::ledger
