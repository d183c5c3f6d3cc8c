#pragma once
// The ledger's /metrics families, fed from closed windows: cost, energy, held
// and busy GPU-seconds, VRAM, launches, efficiency, shares, split evidence and
// the device data's checks. They continue from the store's totals at start
// (load, add_stored) and grow by each window written (add_window). The
// series of accounts gone for --retire-after leave (series_retirement.h).
// Thread-safe: the window loop feeds it while /metrics is scraped.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ledger/process_sm_meter.h"
#include "ledger/series_retirement.h"
#include "ledger/share_seconds.h"
#include "ledger/store.h"
#include "metrics/prometheus_text.h"

namespace gpuledger::ledger {

// The labels an account is exported with: its own but the Slurm user and
// account, or for the special accounts (__idle__, __unallocated__) team = the
// account name.
AccountLabels export_labels(const std::string& account, const AccountLabels& labels);

class LedgerMetrics {
 public:
  explicit LedgerMetrics(std::string currency) : currency_(std::move(currency)) {}
  // The store's sums (Store::totals) and the start of its first window.
  void load(const LedgerTotals& totals, std::optional<int64_t> first_window_start);
  // A window already in the store: what is not a SQL sum (shares, split, checks).
  void add_stored(const WindowRecord& w);
  // A window just written by this agent.
  void add_window(const WindowRecord& w);
  // NVML's SM time of no known workload, by slot uuid (ProcessSmMeter).
  void set_unattributed_sm(std::map<std::string, ProcessSmMeter::Unattributed> by_slot);
  // The accounts (exported labels) live or holding a GPU at `now`; then the
  // series of those unseen for retire_after() leave. The series continued
  // from the store count as seen at the first call.
  void seen(const std::vector<AccountLabels>& accounts, double now);
  void retire_after(double seconds);
  uint64_t windows_written() const;
  void write(metrics::ExpositionWriter& out) const;

 private:
  struct SeriesKey {
    AccountLabels labels;
    std::string uuid;
    auto operator<=>(const SeriesKey& o) const {
      return std::tie(labels.namespace_name, labels.pod, labels.container, labels.team, uuid) <=>
             std::tie(o.labels.namespace_name, o.labels.pod, o.labels.container, o.labels.team, o.uuid);
    }
    bool operator==(const SeriesKey&) const = default;
  };
  // The labels of an account's series (namespace, pod, container, team, UUID).
  static metrics::Labels series_labels(const SeriesKey& k);
  void record_locked(const WindowRecord& w);
  void record_energy_locked(const WindowRecord& w);
  // A holder whose allocated share is unknown (AccountRecord::allocated_share_known)
  // gets no gpuledger_gpu_allocated_share_ratio sample.
  void record_shares_locked(const WindowRecord& w);
  void add_share_seconds_locked(const WindowRecord& w);
  void count_split_locked(const WindowRecord& w);
  void count_checks_locked(const WindowRecord& w);
  void retire_locked(double now);
  void write_energy(metrics::ExpositionWriter& out) const;
  void write_shares(metrics::ExpositionWriter& out) const;
  void write_share_seconds(metrics::ExpositionWriter& out) const;
  void write_split(metrics::ExpositionWriter& out) const;
  void write_checks(metrics::ExpositionWriter& out) const;

  const std::string currency_;
  mutable std::mutex mu_;
  std::map<std::pair<SeriesKey, ChargeKind>, int64_t> cost_micros_;
  std::map<std::tuple<SeriesKey, ChargeKind, std::string>, int64_t> energy_millijoules_;  // by source too
  std::map<SeriesKey, double> held_gpu_seconds_, busy_gpu_seconds_, share_, vram_byte_seconds_;
  // Allocated against used in each slot's last window (allocation_use.h);
  // used by resource (activity, vram, energy).
  std::map<SeriesKey, double> allocated_share_;
  std::map<std::pair<SeriesKey, std::string>, double> used_share_;
  // Allocated against used and carbon over every window (share_seconds.h),
  // for fleet reports: exact sums that continue from the store at start.
  std::map<SeriesKey, ShareSeconds> share_seconds_;
  std::map<SeriesKey, double> carbon_grams_;
  // Allocation against use from the device side (schema 9): seconds used
  // without holding, held without using, over every window.
  std::map<SeriesKey, double> used_unallocated_, allocated_unused_;
  std::map<SeriesKey, uint64_t> launches_;
  std::map<SeriesKey, std::array<double, 4>> efficiency_weighted_, efficiency_known_;  // LedgerTotals::Seconds
  std::map<std::string, double> gpu_busy_seconds_;
  // Windows by (uuid, split_source), from the store at start, and NVML/span
  // disagreements by uuid since the agent started.
  std::map<std::pair<std::string, std::string>, uint64_t> split_windows_;
  std::map<std::string, uint64_t> split_disagreements_;
  std::map<std::string, ProcessSmMeter::Unattributed> unattributed_sm_;  // by slot uuid, the meter's copy
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> suspect_windows_;  // (uuid, field, reason)
  std::map<std::pair<std::string, std::string>, uint64_t> quality_windows_;              // (uuid, quality)
  SeriesRetirement retirement_;
  bool stored_series_seen_ = false;
  uint64_t windows_written_ = 0;
  // The start of the earliest window the counters include (they start from
  // the store's totals): a fleet report tells a ledger that began after its
  // --from (count from 0) from history Prometheus did not see.
  std::optional<int64_t> counters_since_;
};

}  // namespace gpuledger::ledger
