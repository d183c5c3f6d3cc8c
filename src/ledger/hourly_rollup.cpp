#include "ledger/hourly_rollup.h"

#include <map>

#include "ledger/efficiency_mean.h"
#include "ledger/window_evidence.h"

namespace gpuledger::ledger {

namespace {

template <typename Get>
std::string agreed(const std::vector<WindowRecord>& ws, Get get) {
  for (const auto& w : ws)
    if (get(w) != get(ws.front())) return "mixed";
  return get(ws.front());
}

struct AccountSum {
  AccountRecord record;
  double held_seconds = 0, allocated_seconds = 0, activity_seconds = 0;
  EfficiencyMean efficiency;
};

}  // namespace

WindowRecord merge_windows(const std::vector<WindowRecord>& ws) {
  WindowRecord m;
  if (ws.empty()) return m;
  m.slot = ws.front().slot;
  m.gpu_fraction = ws.front().gpu_fraction;
  m.currency = ws.front().currency;
  m.start = ws.front().start;
  m.end = ws.front().end;
  m.exclusive = true;
  EfficiencyMean device;
  double busy_seconds = 0, allocated_seconds = 0;
  std::map<std::string, AccountSum> accounts;
  std::map<std::pair<std::string, ChargeKind>, int64_t> charges;
  for (const auto& w : ws) {
    const double len = static_cast<double>(w.end - w.start);
    m.start = std::min(m.start, w.start);
    m.end = std::max(m.end, w.end);
    m.cost_micros += w.cost_micros;
    m.busy_micros += w.busy_micros;
    m.idle_micros += w.idle_micros;
    m.memory_micros += w.memory_micros;
    allocated_seconds += w.allocated_total * len;
    m.observed_seconds += w.observed_seconds;
    m.exclusive = m.exclusive && w.exclusive;
    busy_seconds += w.busy_fraction * len;
    device.add(w.device, len);
    m.device_quality.ok += w.device_quality.ok;
    m.device_quality.suspect += w.device_quality.suspect;
    m.device_quality.absent += w.device_quality.absent;
    for (const auto& [key, n] : w.device_findings) m.device_findings[key] += n;
    for (const auto& a : w.accounts) {
      AccountSum& s = accounts[a.account];
      s.record.account = a.account;
      if (!(a.labels == AccountLabels{})) s.record.labels = a.labels;  // in start order: the latest wins
      s.held_seconds += a.held_share * len;
      s.allocated_seconds += a.allocated_share * len;
      s.record.allocated_share_known = s.record.allocated_share_known && a.allocated_share_known;  // one unknown: unknown
      s.activity_seconds += a.activity_share * len;
      s.record.busy_seconds += a.busy_seconds;
      s.record.gpu_busy_seconds += a.gpu_busy_seconds;
      s.record.vram_byte_seconds += a.vram_byte_seconds;
      s.record.launches += a.launches;
      s.efficiency.add(a.efficiency, len);
      auto sum = [](std::optional<double>& into, const std::optional<double>& v) {
        if (v) into = into.value_or(0) + *v;
      };
      sum(s.record.used_unallocated_seconds, a.used_unallocated_seconds);
      sum(s.record.allocated_unused_seconds, a.allocated_unused_seconds);
    }
    for (const auto& c : w.charges) charges[{c.account, c.kind}] += c.micros;
  }
  const double total = static_cast<double>(m.end - m.start);
  m.busy_fraction = total > 0 ? busy_seconds / total : 0;
  m.device = device.mean();
  m.busy_source = agreed(ws, [](const WindowRecord& w) { return w.busy_source; });
  m.split_source = agreed(ws, [](const WindowRecord& w) { return w.split_source; });
  m.source = agreed(ws, [](const WindowRecord& w) { return w.source; });
  m.cost_policy = agreed(ws, [](const WindowRecord& w) { return w.cost_policy; });
  m.allocated_total = total > 0 ? allocated_seconds / total : 0;
  // Rightsizing evidence: peaks, p95s and idle runs over the windows in order
  // (window_evidence.h); a window without the account breaks its idle run.
  for (auto& [name, s] : accounts) {
    std::vector<EvidenceSpan> spans;
    for (const auto& w : ws) {
      const AccountRecord* rec = nullptr;
      for (const auto& a : w.accounts)
        if (a.account == name) rec = &a;
      spans.push_back({rec, w.start, w.end});
    }
    s.record.evidence = merge_evidence(spans);
  }
  for (auto& [name, s] : accounts) {
    s.record.held_share = total > 0 ? s.held_seconds / total : 0;
    s.record.allocated_share = total > 0 ? s.allocated_seconds / total : 0;
    s.record.activity_share = total > 0 ? s.activity_seconds / total : 0;
    s.record.efficiency = s.efficiency.mean();
    m.accounts.push_back(std::move(s.record));
  }
  for (const auto& [key, micros] : charges) m.charges.push_back({key.first, key.second, micros});
  m.energy = merge_energy(ws);
  return m;
}

std::optional<WindowEnergyRecord> merge_energy(const std::vector<WindowRecord>& ws) {
  std::optional<WindowEnergyRecord> m;
  std::map<std::pair<std::string, ChargeKind>, int64_t> parts;
  bool all_carbon = true;
  long double grams_per_kwh_mj = 0;  // sum of intensity x mJ: the merged intensity is energy-weighted
  for (const auto& w : ws) {
    if (!w.energy) continue;  // unknown: adds nothing
    if (!m) m = WindowEnergyRecord{0, w.energy->source, {}, w.energy->carbon_g_per_kwh};
    else if (m->source != w.energy->source) m->source = "mixed";
    m->millijoules += w.energy->millijoules;
    if (w.energy->carbon_g_per_kwh)
      grams_per_kwh_mj += static_cast<long double>(*w.energy->carbon_g_per_kwh) * w.energy->millijoules;
    else
      all_carbon = false;
    for (const auto& c : w.energy->charges) parts[{c.account, c.kind}] += c.millijoules;
  }
  if (!m) return std::nullopt;
  if (!all_carbon)
    m->carbon_g_per_kwh.reset();
  else if (m->millijoules > 0)
    m->carbon_g_per_kwh = static_cast<double>(grams_per_kwh_mj / m->millijoules);
  for (const auto& [key, mj] : parts) m->charges.push_back({key.first, key.second, mj});
  return m;
}

}  // namespace gpuledger::ledger
