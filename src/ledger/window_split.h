#pragma once
// The chargeback arithmetic of one accounting window on one GPU (a physical GPU
// or a MIG instance): who pays what part of the window's cost. Pure: no clock,
// no I/O. Every result adds up to the window's cost exactly.
//
// Definitions (the contract the tests pin down):
//
//  * Cost C: integer micro-units of the currency (prices.h computes it).
//  * Users: accounts with any activity in the window (busy_seconds > 0,
//    launches > 0 or vram_byte_seconds > 0).
//  * Activity weight of a user: the best evidence of its GPU time the window
//    has (split_source.h names it, docs/ledger.md says why):
//      nvml      its processes' SM time from NVML's per-process utilisation
//                samples (Activity::nvml_sm_seconds), when any user has some;
//                processes of no known workload are the user
//                __unattributed__. When that user has more than
//                kUnattributedFallbackShare of the window's NVML time, the
//                next evidence below with any weight decides instead
//                (split_source spans-unattributed, launches-unattributed);
//                with none, NVML's split stands (the unattributed part is
//                never given to the named users).
//      spans     else its busy_seconds (the eBPF estimate of GPU-busy time:
//                launch-to-completion spans per stream and context);
//      launches  else its launches;
//      vram      else its VRAM byte-seconds;
//      none      no user at all.
//    Where NVML decided and the span shares differ from its shares by more
//    than kSplitDisagreementPoints for some user, split_disagreement is set
//    (NVML still wins; the accountant counts it).
//  * Busy fraction f in [0,1]: the device's busy fraction (DCGM/NVML) when
//    given (clamped to [0,1]); otherwise sum(busy_seconds of all users) /
//    window_seconds, capped at 1 (0 when window_seconds <= 0).
//  * busy part B = round-half-up(C * f), idle part I = C - B.
//
// Cases, in order:
//  1. Exclusive: exactly one holder and no user other than it. The holder
//     pays C: B as kind busy, I as kind idle. The idle policy does not apply.
//  2. Otherwise (shared, unheld, or used by non-holders):
//     - B is split among the users by activity weight (kind busy). A user that
//       does not hold the GPU (e.g. the real user behind a fractional-GPU
//       scheduler's reservation pod) pays for its activity like any user.
//       If there are no users (f > 0 from the device but no attributed
//       activity), B goes to the holders by holder weight, else to
//       __unallocated__ (kind busy).
//     - I follows the idle policy:
//         kHolders: split among the holders by holder weight (default);
//         kUsage:   split among the users by activity weight (holders, by
//                   weight, when there are no users);
//         kIdle:    all to __idle__.
//       With no holder at all, I goes to __unallocated__ (whatever the
//       policy, except kUsage with users, which splits it among them).
//  * Splits use largest-remainder rounding: each account gets the floor of
//    its exact share, and the micro-units left over go one each to the
//    largest fractional remainders, ties broken by account id (ascending).
//  * Charges of 0 micro-units are omitted, except that a holder always gets
//    at least an idle charge row (possibly 0) so reports can show who held.
//  * Charges come out sorted by (account, kind busy before idle before
//    memory); one row per (account, kind).
//
// Cost policy (WindowInput::cost_policy; docs/ledger.md has worked examples).
// Holder weights are allocated shares of the slot (GpuAllocation::share
// summed per holder: 1 = the whole GPU or MIG instance, 1/N one of N
// replicas, 0.3 a HAMi fraction). Their sum S is the allocated part of the
// slot; S > 1 is over-committed (overcommitted = true) and the shares are
// scaled by 1/S. Allocated targets: each holder weight / max(1, S), and
// __unallocated__ 1 - S when S < 1 (no holder: all __unallocated__).
//  * kUsage (default): the cases above, unchanged.
//  * kAllocated: B and I are each split over the allocated targets (kinds
//    busy and idle); a user that holds nothing pays nothing (the report names
//    it an over-user).
//  * kBlend: B and I are each cut in two, a = round-half-up(part x
//    blend_allocated_weight) and part - a; a goes by the allocated targets, the
//    rest by kUsage.
//  * A holder whose share is unknown (Holder::share_known false: the sources
//    could not tell how many replicas the device has) makes the window's
//    allocation-based parts go by the activity weights instead (with no users,
//    like the kUsage part beside them); allocation_unknown = true, never
//    overcommitted: an unknown part is never billed as a number.
// Memory split (memory_price_share m in [0,1], default 0; the accountant
// derives it per slot from vram_per_gib_hour when that is set: vram_price.h): the memory part
// M = round-half-up(C x m) is cut out of C first; B and I above are then parts
// of the compute part C - M (f applies to it). M is split (kind memory) over
// the VRAM byte-seconds held (every account with VRAM, holder or not) and,
// when vram_capacity_bytes is known, the unheld byte-seconds (capacity x
// window - held, >= 0); without a capacity, M is all unheld only when nobody
// held VRAM. The unheld part goes like an idle part: under kUsage by the idle
// policy (users weighted by their VRAM when kUsage), under kAllocated by the
// allocated targets, kBlend cut in two as above. So B + I + M = C exactly.
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
