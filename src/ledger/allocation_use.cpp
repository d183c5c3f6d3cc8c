#include "ledger/allocation_use.h"

#include <algorithm>
#include <cmath>

namespace gpuledger::ledger {

WindowAccountShares account_shares(const WindowRecord& w) {
  WindowAccountShares out;
  out.accounts.reserve(w.accounts.size());
  auto account = [&](std::string_view name) -> AccountShares& {
    for (AccountShares& a : out.accounts)
      if (a.account == name) return a;
    return out.accounts.emplace_back(AccountShares{name});
  };
  double vram = 0;
  for (const auto& a : w.accounts)
    if (!is_special_account(a.account)) {
      if (a.vram_byte_seconds > 0) vram += a.vram_byte_seconds;
      AccountShares& acc = account(a.account);
      acc.allocated_unknown = acc.allocated_unknown || !a.allocated_share_known;
      out.any_unknown = out.any_unknown || acc.allocated_unknown;
    }
  for (const auto& a : w.accounts)
    if (a.allocated_share > 0 && !is_special_account(a.account))
      if (AccountShares& acc = account(a.account); !acc.allocated_unknown) {
        acc.allocated += a.allocated_share;
        out.allocated_total += a.allocated_share;
      }
  if (!out.any_unknown && out.allocated_total > 1)  // over-committed: scaled by 1/S
    for (AccountShares& acc : out.accounts) acc.allocated /= out.allocated_total;
  // Busy energy: an account's part; a charge of an account without a record is in the total alone.
  std::vector<int64_t> busy_mj(out.accounts.size());
  int64_t busy_total = 0;
  if (w.energy)
    for (const auto& c : w.energy->charges)
      if (c.kind == ChargeKind::kBusy && !is_special_account(c.account)) {
        for (size_t i = 0; i < out.accounts.size(); ++i)
          if (out.accounts[i].account == c.account) busy_mj[i] += c.millijoules;
        busy_total += c.millijoules;
      }
  for (const auto& a : w.accounts) {
    if (is_special_account(a.account)) continue;
    AccountShares& acc = account(a.account);
    acc.used.activity = a.activity_share;
    acc.used.vram = vram > 0 ? std::max(0.0, a.vram_byte_seconds) / vram : 0;
  }
  if (busy_total > 0)
    for (size_t i = 0; i < out.accounts.size(); ++i)
      out.accounts[i].used.energy = static_cast<double>(busy_mj[i]) / static_cast<double>(busy_total);
  return out;
}

std::set<std::string> unknown_allocated_shares(const WindowRecord& w) {
  std::set<std::string> out;
  for (const auto& a : account_shares(w).accounts)
    if (a.allocated_unknown) out.emplace(a.account);
  return out;
}

std::map<std::string, double> allocated_shares(const WindowRecord& w) {
  const WindowAccountShares shares = account_shares(w);
  std::map<std::string, double> out;
  for (const auto& a : shares.accounts)
    if (!a.allocated_unknown && a.allocated > 0) out.emplace(a.account, a.allocated);
  if (!shares.any_unknown && shares.allocated_total < 1 - 1e-9)
    out[std::string(kUnallocatedAccount)] = 1 - shares.allocated_total;
  return out;
}

std::map<std::string, UsedShares> used_shares(const WindowRecord& w) {
  std::map<std::string, UsedShares> out;
  for (const auto& a : account_shares(w).accounts) out.emplace(a.account, a.used);
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
