#pragma once
// The chargeback arithmetic of one accounting window on one GPU (a physical GPU
// or a MIG instance): who pays what part of the window's cost. Pure: no clock,
// no I/O. Every result adds up to the window's cost exactly: busy part B and
// idle part I of the compute cost, memory part M, split by largest remainder
// (ties by account id). The contract the tests pin down - users and holders,
// the activity weights (split_source.h), the idle and cost policies, the
// memory split - is docs/ledger.md, "Split of one window on one GPU".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/split_source.h"

namespace gpuledger::ledger {

inline constexpr std::string_view kIdleAccount = "__idle__";
inline constexpr std::string_view kUnallocatedAccount = "__unallocated__";
// Holds a GPU whose allocation could not be read (the kubelet never answered,
// or not for longer than kubernetes.allocation_keep_seconds): not "nobody held
// it" (__unallocated__), but "who held it is not known" (allocation_unknown.h).
inline constexpr std::string_view kAllocationUnknownAccount = "__allocation_unknown__";
// SM time NVML reports for processes no workload could be named for (no
// snapshot, exit record or /proc cgroup tells their owner): a user of the
// window like any other, so its share of the busy part goes to nobody named
// (process_sm_meter.h). Nobody's bill, like __idle__ under idle_policy idle.
inline constexpr std::string_view kUnattributedAccount = "__unattributed__";
// The accounts the ledger bills that are no workload. Not __overflow__,
// which is billed as an account of its own; the report views treat every
// "__name__" as special (report/special_accounts.h).
inline bool is_special_account(std::string_view account) {
  return account == kIdleAccount || account == kUnallocatedAccount || account == kAllocationUnknownAccount ||
         account == kUnattributedAccount;
}

enum class IdlePolicy { kHolders, kUsage, kIdle };
std::string_view to_string(IdlePolicy policy);
// "holders", "usage", "idle"; throws Error otherwise.
IdlePolicy parse_idle_policy(std::string_view text);

enum class ChargeKind { kBusy, kIdle, kMemory };
std::string_view to_string(ChargeKind kind);  // "busy", "idle", "memory"
// The inverse; throws Error on anything else.
ChargeKind parse_charge_kind(std::string_view text);

enum class CostPolicy { kUsage, kAllocated, kBlend };
std::string_view to_string(CostPolicy policy);  // "usage", "allocated", "blend"
// The inverse; throws Error otherwise.
CostPolicy parse_cost_policy(std::string_view text);

enum class BusySource { kDevice, kSpans };
std::string_view to_string(BusySource source);  // "device", "spans"

struct Activity {
  double busy_seconds = 0;       // launch-to-completion span estimate
  double vram_byte_seconds = 0;  // device memory held, integrated over the window
  uint64_t launches = 0;
  // SM-seconds its processes ran, integrated from NVML's per-process
  // utilisation samples (process_sm_meter.h); 0 where NVML has none.
  double nvml_sm_seconds = 0;
  bool any() const { return busy_seconds > 0 || nvml_sm_seconds > 0 || vram_byte_seconds > 0 || launches > 0; }
};

struct Holder {
  std::string account;
  double weight = 1.0;  // > 0: the allocated share of the slot (1 whole, 1/N a replica, a fraction)
  // false: the sources could not tell the share (GpuAllocation::share_known);
  // `weight` is then a placeholder that never decides an allocation-based part.
  bool share_known = true;
};

struct WindowInput {
  int64_t cost_micros = 0;  // >= 0
  double window_seconds = 60;
  std::vector<Holder> holders;              // duplicates are merged (weights add)
  std::map<std::string, Activity> activity;  // by account; entries with no activity are ignored
  std::optional<double> device_busy_fraction;
  IdlePolicy idle_policy = IdlePolicy::kHolders;
  CostPolicy cost_policy = CostPolicy::kUsage;
  double blend_allocated_weight = 0.5;       // [0,1], kBlend only
  double memory_price_share = 0;             // [0,1]: the part of C that is for the slot's memory
  std::optional<double> vram_capacity_bytes;  // the slot's memory, when known
  // Whether NVML's samples were seen to split the slot between processes
  // (Observation::nvml_splits_processes). false: its SM seconds do not weigh
  // two users against each other, and the next evidence splits the window.
  bool nvml_splits_users = true;
};

struct Charge {
  std::string account;
  ChargeKind kind = ChargeKind::kBusy;
  int64_t micros = 0;
  bool operator==(const Charge&) const = default;
};

struct WindowSplit {
  std::vector<Charge> charges;
  double busy_fraction = 0;
  BusySource busy_source = BusySource::kSpans;
  int64_t busy_micros = 0;    // of the compute part
  int64_t idle_micros = 0;    // of the compute part
  int64_t memory_micros = 0;  // the memory part (busy + idle + memory = cost)
  bool exclusive = false;
  double allocated_total = 0;  // S: the holders' weights summed
  bool overcommitted = false;  // S > 1 (never when allocation_unknown)
  // A holder's share was unknown: the allocation-based parts went by activity.
  bool allocation_unknown = false;
  // Each user's fraction of the activity (sums to 1 when there are users);
  // used to apportion device efficiency counters on shared GPUs.
  std::map<std::string, double> activity_share;
  // Which evidence gave the activity weights (the precedence above).
  SplitSource split_source = SplitSource::kNone;
  // NVML split the window and the span shares disagreed by more than
  // kSplitDisagreementPoints for some user (the largest gap, in points).
  bool split_disagreement = false;
  double split_disagreement_points = 0;
};

// Throws Error on a negative cost, a non-positive holder weight, an empty
// account id, or a blend weight or memory share outside [0,1].
WindowSplit split_window(const WindowInput& input);

// Largest-remainder split of `total` (>= 0) by `weights` (>= 0, not all 0);
// ties by key ascending (common/largest_remainder.h: the rule the launches and
// the shown cents use too). The result has one entry per key and sums to total.
std::map<std::string, int64_t> largest_remainder(int64_t total, const std::map<std::string, double>& weights);

}  // namespace gpuledger::ledger
