#include "ledger/share_seconds.h"

#include <algorithm>

#include "ledger/allocation_use.h"

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

namespace {
constexpr auto kByAccount = [](const WindowShares::Entry& e, std::string_view a) { return e.first < a; };
}  // namespace

const ShareSeconds* WindowShares::find(std::string_view account) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), account, kByAccount);
  return it != entries_.end() && it->first == account ? &it->second : nullptr;
}

ShareSeconds& WindowShares::operator[](std::string_view account) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), account, kByAccount);
  if (it == entries_.end() || it->first != account) it = entries_.insert(it, Entry{account, {}});
  return it->second;
}

WindowShares share_seconds(const WindowRecord& w) {
  const double gpu_seconds = static_cast<double>(w.end - w.start) * w.gpu_fraction;
  WindowShares out;
  for (const auto& a : account_shares(w).accounts) {
    ShareSeconds& s = out[a.account];
    s.share = gpu_seconds;
    if (a.allocated_unknown)
      s.allocated_unknown = gpu_seconds;
    else
      s.allocated = a.allocated * gpu_seconds;
    s.used_activity = a.used.activity * gpu_seconds;
    s.used_vram = a.used.vram * gpu_seconds;
    if (a.used.energy) {  // the window's busy energy known: every account's
      s.energy_share = gpu_seconds;
      s.used_energy = *a.used.energy * gpu_seconds;
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
