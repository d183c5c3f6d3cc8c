#include "ledger/allocation_use.h"

#include <cmath>

namespace gpuledger::ledger {

namespace {
}  // namespace

std::set<std::string> unknown_allocated_shares(const WindowRecord& w) {
  std::set<std::string> out;
  for (const auto& a : w.accounts)
    if (!a.allocated_share_known && !is_special_account(a.account)) out.insert(a.account);
  return out;
}

std::map<std::string, double> allocated_shares(const WindowRecord& w) {
  std::map<std::string, double> out;
  double total = 0;
  const std::set<std::string> unknown = unknown_allocated_shares(w);
  for (const auto& a : w.accounts)
    if (a.allocated_share > 0 && !is_special_account(a.account) && !unknown.contains(a.account)) {
      out[a.account] += a.allocated_share;
      total += a.allocated_share;
    }
  if (!unknown.empty()) return out;
  if (total > 1) {
    for (auto& [account, share] : out) share /= total;
  } else if (total < 1 - 1e-9) {
    out[std::string(kUnallocatedAccount)] = 1 - total;
  }
  return out;
}

std::map<std::string, UsedShares> used_shares(const WindowRecord& w) {
  std::map<std::string, UsedShares> out;
  double vram = 0;
  for (const auto& a : w.accounts)
    if (!is_special_account(a.account) && a.vram_byte_seconds > 0) vram += a.vram_byte_seconds;
  std::map<std::string, int64_t> busy_mj;
  int64_t busy_total = 0;
  if (w.energy)
    for (const auto& c : w.energy->charges)
      if (c.kind == ChargeKind::kBusy && !is_special_account(c.account)) {
        busy_mj[c.account] += c.millijoules;
        busy_total += c.millijoules;
      }
  for (const auto& a : w.accounts) {
    if (is_special_account(a.account)) continue;
    UsedShares& u = out[a.account];
    u.activity = a.activity_share;
    u.vram = vram > 0 ? std::max(0.0, a.vram_byte_seconds) / vram : 0;
    if (busy_total > 0) u.energy = static_cast<double>(busy_mj[a.account]) / static_cast<double>(busy_total);
  }
  return out;
}

ShareFlag share_flag(double allocated, double used) {
  if (used - allocated > kShareFlagMargin + 1e-9) return ShareFlag::kOver;
  if (allocated - used > kShareFlagMargin + 1e-9) return ShareFlag::kUnder;
  return ShareFlag::kNone;
}

std::string_view to_string(ShareFlag flag) {
  switch (flag) {
    case ShareFlag::kOver: return "over";
    case ShareFlag::kUnder: return "under";
    case ShareFlag::kNone: break;
  }
  return "";
}

}  // namespace gpuledger::ledger
