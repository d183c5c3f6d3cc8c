#include "ledger/share_seconds.h"

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

std::map<std::string, ShareSeconds> share_seconds(const WindowRecord& w) {
  const double gpu_seconds = static_cast<double>(w.end - w.start) * w.gpu_fraction;
  const auto used = used_shares(w);  // every non-special account of the window
  bool energy_known = false;
  for (const auto& [account, u] : used) energy_known |= u.energy.has_value();
  const auto allocated = allocated_shares(w);
  const auto unknown = unknown_allocated_shares(w);
  std::map<std::string, ShareSeconds> out;
  for (const auto& [account, u] : used) {
    ShareSeconds& s = out[account];
    s.share = gpu_seconds;
    if (unknown.contains(account)) {
      s.allocated_unknown = gpu_seconds;
    } else if (auto it = allocated.find(account); it != allocated.end()) {
      s.allocated = it->second * gpu_seconds;
    }
    s.used_activity = u.activity * gpu_seconds;
    s.used_vram = u.vram * gpu_seconds;
    if (energy_known) {
      s.energy_share = gpu_seconds;
      s.used_energy = u.energy.value_or(0) * gpu_seconds;
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
