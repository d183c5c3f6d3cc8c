#pragma once
// The ledger's embedded store: SQLite in WAL mode (--store PATH), PRAGMA
// user_version = kStoreSchemaVersion, application_id 'GPLG'. Its tables, the
// schema history and the migrations of older stores: docs/ledger.md, "Store".
// The window record's persisted fields, listed once for the store, the fleet
// database and the window JSON: window_fields.h. Times are Unix seconds; a
// window is written once, with its accounts and charges, in one transaction;
// writing the same (start, gpu) again is a no-op. Opening a file that is not a
// store, or a store from a newer schema, throws Error with the path and what
// to do, never crashes.
#include <array>
#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ledger/energy_split.h"
#include "ledger/prices.h"
#include "ledger/window_split.h"

struct sqlite3;

namespace gpuledger::ledger {

inline constexpr int kStoreSchemaVersion = 10;

// The cumulative kernel counters per account (workload id) that the stored
// windows were charged up to, and the identity of the kernel counter set they
// were read from (the pinned map; docs/ledger.md, "The window loop"); empty: none known.
struct CounterBaseline {
  struct Counters {
    double busy_seconds = 0;
    uint64_t launches = 0;
    bool operator==(const Counters&) const = default;
  };
  std::string counter_set;
  std::map<std::string, Counters> accounts;
  bool operator==(const CounterBaseline&) const = default;
};

struct AccountLabels {
  std::string namespace_name, pod, container, team;
  // A Slurm job's user and account, from its controller (schema 10); "" for
  // any other workload, and in windows written before schema 10.
  std::string slurm_user, slurm_account;
  bool operator==(const AccountLabels&) const = default;
};

struct Efficiency {
  std::optional<double> sm_active, sm_occupancy, tensor_active, dram_active;  // ratios 0..1
  bool operator==(const Efficiency&) const = default;
};

// A run of held windows without launches, in seconds: from the record's
// start (lead), up to its end (trail), and the longest anywhere in it.
struct IdleRun {
  double lead = 0, trail = 0, longest = 0;
  bool operator==(const IdleRun&) const = default;
};

// Rightsizing evidence of one account on one slot in one window (schema 6).
// A single window leaves the derived fields unset: they follow from the
// record's own columns (window_evidence.h). An hourly roll-up sets them, since
// a p95 or a run of idle windows cannot be rebuilt from sums.
struct AccountEvidence {
  // The peak of the live bytes the probes saw it hold on the slot; nullopt: not watched (backfill, older stores).
  std::optional<uint64_t> vram_peak_bytes;
  std::optional<uint64_t> vram_p95_bytes;       // a roll-up: p95 of its windows' peaks; nullopt: the peak
  // The peak of NVML's per-process used memory of its processes on the slot
  // (which includes each CUDA context's own memory); nullopt: NVML had none.
  std::optional<uint64_t> nvml_vram_peak_bytes;
  std::optional<uint64_t> nvml_vram_p95_bytes;  // a roll-up: p95 of its windows' peaks; nullopt: the peak
  std::optional<double> sm_active_p95, sm_occupancy_p95;  // a roll-up: p95 of its windows' device values; nullopt: efficiency's
  std::optional<double> busy_p95;  // a roll-up: p95 of its windows' span busy fraction; nullopt: busy_seconds / window
  std::optional<IdleRun> idle;     // a roll-up: its idle runs; nullopt: the window is idle when held without launches
  std::optional<int64_t> windows;  // a roll-up: how many windows it merged; nullopt: 1
  bool operator==(const AccountEvidence&) const = default;
};

struct AccountRecord {
  std::string account;  // workload id, or __idle__ / __unallocated__
  AccountLabels labels;
  double held_share = 0;         // of the slot: holder weight / all holder weights; 0 when not a holder
  double allocated_share = 0;    // of the slot, as allocated (GpuAllocation::share summed); 0 when not a holder
  bool allocated_share_known = true;  // false: a placeholder (GpuAllocation::share_known false), shown as unknown
  double busy_seconds = 0;       // eBPF span estimate
  double activity_share = 0;     // of the window's activity (window_split.h)
  double gpu_busy_seconds = 0;   // busy_fraction x window x activity_share (busy time attributed)
  double vram_byte_seconds = 0;
  uint64_t launches = 0;
  Efficiency efficiency;         // device values (exclusive) or apportioned (shared); unknown = nullopt
  AccountEvidence evidence;      // for rightsizing (schema 6)
  // Allocation against use from the device side (schema 9, allocation_use.h):
  // seconds of the window it used the slot without holding it, and held it
  // without using it; nullopt: not observed.
  std::optional<double> used_unallocated_seconds, allocated_unused_seconds;
  bool operator==(const AccountRecord&) const = default;
};

// A window's energy (energy_meter.h) and its split (energy_split.h); the
// charges add up to millijoules exactly.
struct WindowEnergyRecord {
  int64_t millijoules = 0;
  std::string source;  // dcgm | nvml | power_integrated | mixed (an hourly roll-up of several)
  std::vector<EnergyCharge> charges;
  std::optional<double> carbon_g_per_kwh;  // the configured intensity when written; nullopt: none
  bool operator==(const WindowEnergyRecord&) const = default;
};

struct WindowRecord {
  int64_t start = 0, end = 0;
  GpuSlot slot;
  double gpu_fraction = 1;  // of a physical GPU (MIG: n / slices)
  std::string currency = "USD";
  int64_t cost_micros = 0, busy_micros = 0, idle_micros = 0;
  int64_t memory_micros = 0;           // busy + idle + memory = cost
  std::string cost_policy = "usage";   // usage | allocated | blend | mixed (a roll-up of several)
  double allocated_total = 0;          // the holders' allocated shares summed (> 1: over-committed)
  double busy_fraction = 0;
  std::string busy_source = "spans";  // device | spans
  // Which evidence split the busy part (split_source.h): nvml | spans | launches
  // | vram | none; mixed (a roll-up of several); '' written before schema 7.
  std::string split_source;
  // NVML split it and the spans disagreed (window_split.h); not stored.
  bool split_disagreement = false;
  bool exclusive = false;
  double observed_seconds = 0;  // how much of the window the agent watched
  std::string source = "live";  // live | partial | gap (agent stalled) | backfill (agent down)
  Efficiency device;            // the device's own readings, unknown = nullopt (a suspect one too)
  // How many windows' device data were ok, suspect or absent (schema 9,
  // device_quality.h): a window has 1 in one of them, a roll-up the sums;
  // all 0: not judged (written before schema 9).
  struct DeviceQualityCounts {
    int64_t ok = 0, suspect = 0, absent = 0;
    int64_t judged() const { return ok + suspect + absent; }
    bool operator==(const DeviceQualityCounts&) const = default;
  };
  DeviceQualityCounts device_quality;
  // "field:reason" -> windows it was found in (device_quality.h).
  std::map<std::string, int64_t> device_findings;
  std::vector<AccountRecord> accounts;
  std::vector<Charge> charges;
  std::optional<WindowEnergyRecord> energy;  // nullopt: unknown
  std::string node;  // a fleet report's "cluster/node" the window came from (src/fleet); empty from a local store
  bool operator==(const WindowRecord&) const = default;
};

// A fleet window's `node` ("cluster/node") as its cluster and node, split at
// the last '/': a node's name holds none (fleet-db add-node refuses one), a
// cluster's may. Without a '/': no cluster, the whole as the node.
struct WindowOrigin {
  std::string cluster, node;
};
inline WindowOrigin window_origin(const std::string& cluster_node) {
  const size_t slash = cluster_node.rfind('/');
  if (slash == std::string::npos) return {"", cluster_node};
  return {cluster_node.substr(0, slash), cluster_node.substr(slash + 1)};
}

// Sums over the whole stored ledger, by account and GPU (for the counters an
// agent exports, so they continue across restarts).
struct LedgerTotals {
  struct Cost {
    std::string account;
    AccountLabels labels;
    std::string uuid;
    ChargeKind kind;
    int64_t micros;
  };
  struct Seconds {
    std::string account;
    AccountLabels labels;
    std::string uuid;
    double held_gpu_seconds, busy_gpu_seconds;  // x gpu_fraction
    double vram_byte_seconds = 0;
    uint64_t launches = 0;
    // Per ratio (sm_active, sm_occupancy, tensor_active, dram_active), over
    // the windows where the account had a value: the sum of value x window
    // GPU-seconds, and of window GPU-seconds (their quotient: the average).
    std::array<double, 4> efficiency_weighted{}, efficiency_known{};
    double used_unallocated_seconds = 0, allocated_unused_seconds = 0;  // schema 9, summed
  };
  struct Energy {
    std::string account;
    AccountLabels labels;
    std::string uuid;
    ChargeKind kind;
    std::string source;
    int64_t millijoules;
  };
  std::vector<Cost> cost;
  std::vector<Energy> energy;
  std::vector<Seconds> seconds;
  std::vector<std::pair<std::string, double>> gpu_busy_seconds;  // by uuid: busy_fraction x window
  // Suspect windows by (uuid, "field:reason") (schema 9, device_quality.h).
  std::map<std::pair<std::string, std::string>, int64_t> device_findings;
};

class Store {
 public:
  // kReadWrite creates the file (and its schema) when missing and may be
  // used by several threads; kReadWriteOneThread is the same for one thread
  // only (the fleet shipper's own connection): no mutex around every call.
  enum class Mode { kReadWrite, kReadOnly, kReadWriteOneThread };
  // A writer runs PRAGMA quick_check as it opens the file (a corrupt store
  // says so in one sentence); kCheckedByOwner skips it for a second
  // connection to a file its owner opened and checked (the fleet shipper's,
  // beside the agent's): the check reads every page, 15 % of the shipper's
  // CPU through a 7-day backlog (docs/performance.md).
  enum class Check { kQuick, kCheckedByOwner };
  explicit Store(const std::string& path, Mode mode = Mode::kReadWrite, Check check = Check::kQuick);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Writes the window, its accounts and charges atomically. Returns false (and
  // writes nothing) when (start, slot.uuid) is already stored. Throws Error when
  // the charges do not add up to cost_micros.
  bool insert_window(const WindowRecord& window);
  // The same for several windows in one transaction; returns how many were new.
  size_t insert_windows(const std::vector<WindowRecord>& windows);
  // The windows (which may be none) and the counter baseline after them in one
  // transaction: the baseline is replaced, and the meta keys in `meta` set (what
  // the windows carry into the next ones, rate_remainder.h). Returns, per
  // window, whether it was new.
  std::vector<bool> store_windows(const std::vector<WindowRecord>& windows, const CounterBaseline& baseline,
                                  const std::map<std::string, std::string>& meta = {});
  // The baseline stored with the latest windows; nullopt when none (a store
  // from before schema 4, or one never written with a baseline).
  std::optional<CounterBaseline> counter_baseline() const;
  // The end of the latest stored window, over all GPUs; nullopt when empty.
  std::optional<int64_t> last_window_end() const;
  // The start of the earliest stored window; nullopt when empty.
  std::optional<int64_t> first_window_start() const;
  // Windows with from <= start < to, by (start, gpu uuid), with accounts and charges.
  std::vector<WindowRecord> windows(int64_t from, int64_t to) const;
  // The same windows, streamed in storage order (not sorted): one window in
  // memory at a time, so a month of windows costs no more memory than one.
  void for_each_window(int64_t from, int64_t to, const std::function<void(WindowRecord&&)>& fn) const;
  // windows(from, to), each with its row id (the outbox's key, and the
  // fleet shipper's for the digests it kept of the windows it shipped).
  std::vector<std::pair<int64_t, WindowRecord>> windows_with_ids(int64_t from, int64_t to) const;
  // Which windows those are (row id, slot uuid, start, end), in no order,
  // without reading their accounts and charges.
  struct WindowKey {
    int64_t id = 0;
    std::string uuid;
    int64_t start = 0, end = 0;
  };
  std::vector<WindowKey> window_keys(int64_t from, int64_t to) const;
  // Windows with their row ids in windows_with_ids' order: by (start, gpu uuid).
  static void sort_by_start_and_gpu(std::vector<std::pair<int64_t, WindowRecord>>& windows);
  // Merges the windows shorter than an hour that started before `cutoff`
  // (rounded down to the hour) into one window per GPU slot and hour
  // (hourly_rollup.h): costs, charges and held time conserved exactly per
  // GPU and account. Returns how many windows were merged away. At most
  // `max_days` days of windows are merged per call (the agent calls it hourly
  // with 1: a store from before roll-ups catches up without stalling it).
  int64_t roll_up_before(int64_t cutoff, int max_days = INT_MAX);
  LedgerTotals totals() const;
  // Deletes windows that ended at or before `cutoff`; returns how many.
  int64_t delete_before(int64_t cutoff);
  int schema_version() const;
  // Free-form facts stored beside the windows in the meta table (keys by
  // prefix, e.g. "bill/": the node, cluster and price lists, bill_inputs.h).
  void set_meta(const std::string& key, const std::string& value);
  std::optional<std::string> meta(const std::string& key) const;
  std::vector<std::pair<std::string, std::string>> meta_with_prefix(const std::string& prefix) const;
  // Removes the keys that start with `prefix`; returns how many.
  int64_t erase_meta_with_prefix(const std::string& prefix);
  const std::string& path() const { return path_; }

  // When slots had no memory part because their memory size was unknown while
  // vram_per_gib_hour was set (vram_price.h), for the reports' notes: per slot
  // the spans [start, end) of such windows (meta key "memory_size_unknown/<uuid>",
  // value "start-end,...": contiguous windows extend a span; at most
  // kMemorySizeUnknownSpans kept, the oldest dropped). Independent of the
  // windows, so roll-ups and retention leave it alone.
  struct MemorySizeUnknown {
    std::string uuid;
    int64_t start = 0, end = 0;
    bool operator==(const MemorySizeUnknown&) const = default;
  };
  static constexpr size_t kNotedSpans = 100;
  static constexpr size_t kMemorySizeUnknownSpans = kNotedSpans;
  void note_memory_size_unknown(const std::vector<std::string>& uuids, int64_t start, int64_t end);
  // The spans that overlap [from, to), by uuid and start.
  std::vector<MemorySizeUnknown> memory_size_unknown(int64_t from, int64_t to) const;

  // The windows of the node that ran (in part) under the billing probe set
  // (probes/probe_sets.h): no launch, copy or wait was probed, so their launch
  // counts are not counts. Meta key "hot_path_not_probed", spans as above.
  void note_hot_path_not_probed(int64_t start, int64_t end);
  // Its spans that overlap [from, to), in start order.
  std::vector<std::pair<int64_t, int64_t>> hot_path_not_probed(int64_t from, int64_t to) const;

 private:
  void exec(const std::string& sql) const;
  // Extends (or starts) the span note of each key with [start, end); at most kNotedSpans each.
  void note_spans(const std::vector<std::string>& keys, int64_t start, int64_t end);
  void check_charges(const WindowRecord& window) const;
  void insert_energy(int64_t window_id, const WindowRecord& window);
  bool insert_window_in_transaction(const WindowRecord& window);
  void for_each_window_with_id(int64_t from, int64_t to, const std::function<void(int64_t, WindowRecord&&)>& fn) const;
  [[noreturn]] void fail(const std::string& what) const;
  friend class Outbox;  // the fleet outbox's marker on the same connection (ledger/outbox.h)
  std::string path_;
  sqlite3* db_ = nullptr;
  void migrate_to_3();
  void add_column_once(const char* table, const char* column, const char* definition);
  void write_baseline(const CounterBaseline& baseline);
  bool has_energy_ = true;      // false: a schema 1 store opened read-only (energy unknown)
  bool has_quality_ = true;      // false: a schema 1 to 8 store opened read-only (not judged, use unknown)
};

}  // namespace gpuledger::ledger
