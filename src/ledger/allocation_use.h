#pragma once
// Allocated against used, for one stored window: each account's allocated
// share of the slot and its measured shares of what the slot did. Pure; used
// by the agent's /metrics and by reports, so both say the same.
//
//  * allocated: the holder's allocated share (AccountRecord::allocated_share:
//    GpuAllocation::share summed; 1 = the whole GPU or MIG instance). When the
//    shares add up to S > 1 (over-committed) they are scaled by 1/S. The
//    unheld part 1 - S (S < 1) is __unallocated__'s. Non-holders: 0.
//    A holder whose share is unknown (AccountRecord::allocated_share_known
//    false) has no entry: absent, never its placeholder. Nor, then, has
//    __unallocated__, and the others' shares are not scaled (both would depend
//    on the unknown share).
//  * used, per resource:
//      activity  the account's part of the window's attributed activity
//                (AccountRecord::activity_share: busy seconds, else launches,
//                else VRAM, as window_split.h weighs users);
//      vram      its part of the VRAM byte-seconds held on the slot;
//      energy    its part of the busy energy (energy_split.h); absent when the
//                window's energy is unknown or it had no busy energy.
// Special accounts (__idle__, __unallocated__) have no used shares.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/store.h"

namespace gpuledger::ledger {

struct UsedShares {
  double activity = 0;
  double vram = 0;
  std::optional<double> energy;
};

// One non-special account's shares in a window: what the three functions
// below and share_seconds.h are made of, worked out once, in place.
struct AccountShares {
  std::string_view account;        // the window's: valid while it lives
  double allocated = 0;            // its records' shares summed, scaled when over-committed; 0: not a holder
  bool allocated_unknown = false;  // a record's share unknown: `allocated` means nothing
  UsedShares used;                 // its last record's
};
// Every non-special account of the window, in the order it first names them.
struct WindowAccountShares {
  std::vector<AccountShares> accounts;
  bool any_unknown = false;    // then no share is scaled, and nothing is __unallocated__'s
  double allocated_total = 0;  // the known holders' shares summed, before scaling
};
WindowAccountShares account_shares(const WindowRecord& window);

// Every holder, and __unallocated__ when part of the slot is unheld (all of it
// when nobody holds the slot).
std::map<std::string, double> allocated_shares(const WindowRecord& window);
// The window's holders whose allocated share is unknown.
std::set<std::string> unknown_allocated_shares(const WindowRecord& window);
// Every non-special account of the window (holders that used nothing: zeros).
std::map<std::string, UsedShares> used_shares(const WindowRecord& window);

// An account is an over-user when its used share (activity) exceeds its
// allocated share by more than this, an under-user when it falls short by
// more than this (shares of the slot, 0..1: 0.10 = ten points).
inline constexpr double kShareFlagMargin = 0.10;
enum class ShareFlag { kNone, kOver, kUnder };
ShareFlag share_flag(double allocated, double used);
std::string_view to_string(ShareFlag flag);  // "", "over", "under"

}  // namespace gpuledger::ledger
