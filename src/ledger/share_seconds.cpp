#include "ledger/share_seconds.h"

#include <algorithm>

#include "ledger/window_split.h"

namespace gpuledger::ledger {

ShareSeconds& ShareSeconds::operator+=(const ShareSeconds& o) {
  share += o.share;
  allocated += o.allocated;
  allocated_unknown += o.allocated_unknown;
  used_activity += o.used_activity;
  used_vram += o.used_vram;
  used_energy += o.used_energy;
  energy_share += o.energy_share;
  return *this;
}

const ShareSeconds* WindowShares::find(std::string_view account) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), account,
                             [](const Entry& e, std::string_view a) { return e.first < a; });
  return it != entries_.end() && it->first == account ? &it->second : nullptr;
}

ShareSeconds& WindowShares::operator[](std::string_view account) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), account,
                             [](const Entry& e, std::string_view a) { return e.first < a; });
  if (it == entries_.end() || it->first != account) it = entries_.insert(it, Entry{account, {}});
  return it->second;
}

// allocation_use.h's used and allocated shares, worked out here in place:
// the same sums in the same order (so the same doubles), with no map a window.
WindowShares share_seconds(const WindowRecord& w) {
  const double gpu_seconds = static_cast<double>(w.end - w.start) * w.gpu_fraction;
  // Per account of the window: its busy energy, its allocated share summed.
  struct Account {
    std::string_view name;
    int64_t busy_mj = 0;
    double allocated = 0;
    bool allocated_unknown = false;
  };
  std::vector<Account> accounts;
  accounts.reserve(w.accounts.size());
  auto account = [&](std::string_view name) -> Account& {
    for (Account& a : accounts)
      if (a.name == name) return a;
    return accounts.emplace_back(Account{name});
  };
  double vram = 0;
  for (const auto& a : w.accounts)
    if (!is_special_account(a.account)) {
      if (a.vram_byte_seconds > 0) vram += a.vram_byte_seconds;
      Account& acc = account(a.account);
      acc.allocated_unknown = acc.allocated_unknown || !a.allocated_share_known;
    }
  bool any_unknown = false;
  for (const Account& a : accounts) any_unknown = any_unknown || a.allocated_unknown;
  double allocated_total = 0;
  for (const auto& a : w.accounts)
    if (a.allocated_share > 0 && !is_special_account(a.account)) {
      Account& acc = account(a.account);
      if (acc.allocated_unknown) continue;
      acc.allocated += a.allocated_share;
      allocated_total += a.allocated_share;
    }
  int64_t busy_total = 0;
  if (w.energy)
    for (const auto& c : w.energy->charges)
      if (c.kind == ChargeKind::kBusy && !is_special_account(c.account)) {
        // Only the window's accounts have used shares: an energy charge of another is in the total alone.
        for (Account& a : accounts)
          if (a.name == c.account) a.busy_mj += c.millijoules;
        busy_total += c.millijoules;
      }
  const bool scaled = !any_unknown && allocated_total > 1;  // over-committed: shares scaled by 1/S
  WindowShares out;
  for (const auto& a : w.accounts) {
    if (is_special_account(a.account)) continue;
    const Account& acc = account(a.account);
    ShareSeconds& s = out[a.account];  // the last record of an account sets its used shares, as in used_shares
    s.share = gpu_seconds;
    if (acc.allocated_unknown) {
      s.allocated_unknown = gpu_seconds;
    } else if (acc.allocated > 0) {
      s.allocated = (scaled ? acc.allocated / allocated_total : acc.allocated) * gpu_seconds;
    }
    const double activity = a.activity_share;
    const double vram_share = vram > 0 ? std::max(0.0, a.vram_byte_seconds) / vram : 0;
    s.used_activity = activity * gpu_seconds;
    s.used_vram = vram_share * gpu_seconds;
    if (busy_total > 0) {
      s.energy_share = gpu_seconds;
      s.used_energy = static_cast<double>(acc.busy_mj) / static_cast<double>(busy_total) * gpu_seconds;
    } else {
      s.energy_share = 0;
      s.used_energy = 0;
    }
  }
  return out;
}

std::map<std::string, double> carbon_grams(const WindowRecord& w) {
  std::map<std::string, double> out;
  if (!w.energy || !w.energy->carbon_g_per_kwh) return out;
  for (const auto& c : w.energy->charges) out[c.account] += millijoules_to_kwh(c.millijoules) * *w.energy->carbon_g_per_kwh;
  return out;
}

}  // namespace gpuledger::ledger
