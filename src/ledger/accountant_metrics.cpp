// The ledger's metric families: what each stored window adds to the series on
// /metrics (cost, held and busy GPU-seconds, VRAM, launches, efficiency, energy,
// shares), and their exposition. The window bookkeeping stays in accountant.cpp.
#include "ledger/accountant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "common/log.h"
#include "common/utf8.h"
#include "ledger/allocation_use.h"

namespace gpuledger::ledger {

void Accountant::record_metrics_locked(const WindowRecord& w) {
  std::map<std::string, const AccountRecord*> recs;
  for (const auto& a : w.accounts) recs[a.account] = &a;
  auto key_of = [&](const std::string& account) {
    auto it = recs.find(account);
    return SeriesKey{export_labels(account, it == recs.end() ? AccountLabels{} : it->second->labels), w.slot.uuid};
  };
  std::erase_if(share_, [&](const auto& kv) { return kv.first.uuid == w.slot.uuid; });
  for (const auto& a : w.accounts) retirement_.seen(key_of(a.account).labels, static_cast<double>(w.end));
  const double len = static_cast<double>(w.end - w.start);
  for (const auto& c : w.charges) {
    cost_micros_[{key_of(c.account), c.kind}] += c.micros;
    if (w.cost_micros > 0)
      share_[key_of(c.account)] += static_cast<double>(c.micros) / static_cast<double>(w.cost_micros);
  }
  for (const auto& a : w.accounts) {
    SeriesKey k = key_of(a.account);
    held_gpu_seconds_[k] += a.held_share * len * w.gpu_fraction;
    busy_gpu_seconds_[k] += a.gpu_busy_seconds * w.gpu_fraction;
    if (w.cost_micros == 0) share_[k] += a.held_share;
    vram_byte_seconds_[k] += a.vram_byte_seconds;
    launches_[k] += a.launches;
    const std::optional<double> ratios[4] = {a.efficiency.sm_active, a.efficiency.sm_occupancy,
                                             a.efficiency.tensor_active, a.efficiency.dram_active};
    for (int i = 0; i < 4; ++i) {
      if (!ratios[i]) continue;
      efficiency_weighted_[k][i] += *ratios[i] * len * w.gpu_fraction;
      efficiency_known_[k][i] += len * w.gpu_fraction;
    }
  }
  gpu_busy_seconds_[w.slot.uuid] += w.busy_fraction * len;
  record_energy_locked(w);
  record_shares_locked(w);
  add_share_seconds_locked(w);
  count_split_locked(w);
  count_checks_locked(w);
}

metrics::Labels Accountant::series_labels(const SeriesKey& k) {
  return metrics::Labels{{"namespace", k.labels.namespace_name}, {"pod", k.labels.pod},
                          {"container", k.labels.container},      {"team", k.labels.team},
                          {"UUID", k.uuid}};
}

void Accountant::add_share_seconds_locked(const WindowRecord& w) {
  std::map<std::string, AccountLabels> labels;
  for (const auto& a : w.accounts) labels[a.account] = a.labels;
  auto key_of = [&](const std::string& account) { return SeriesKey{export_labels(account, labels[account]), w.slot.uuid}; };
  for (const auto& [account, s] : share_seconds(w)) share_seconds_[key_of(account)] += s;
  for (const auto& [account, grams] : carbon_grams(w)) carbon_grams_[key_of(account)] += grams;
}

void Accountant::write_share_seconds_metrics(metrics::ExpositionWriter& out) const {
  const auto labels = &Accountant::series_labels;
  auto family = [&](const char* name, const char* help, double ShareSeconds::*field) {
    out.family(name, metrics::MetricType::kCounter, help);
    for (const auto& [key, s] : share_seconds_) out.sample(labels(key), s.*field);
  };
  family("gpuledger_ledger_share_gpu_seconds_total",
         "Window GPU-seconds of the account's windows where it held or used the GPU: the denominator of its "
         "allocated and used shares in fleet reports",
         &ShareSeconds::share);
  family("gpuledger_ledger_allocated_share_gpu_seconds_total",
         "The account's allocated share of the GPU times window GPU-seconds, over its windows with a known share",
         &ShareSeconds::allocated);
  family("gpuledger_ledger_allocated_share_unknown_gpu_seconds_total",
         "Window GPU-seconds of the account's windows where its allocated share was unknown",
         &ShareSeconds::allocated_unknown);
  out.family("gpuledger_ledger_used_share_gpu_seconds_total", metrics::MetricType::kCounter,
             "The account's used share of the GPU times window GPU-seconds, by resource: activity, vram, or energy "
             "(over the windows with known busy energy only)");
  static const std::pair<const char*, double ShareSeconds::*> kResources[] = {
      {"activity", &ShareSeconds::used_activity}, {"vram", &ShareSeconds::used_vram},
      {"energy", &ShareSeconds::used_energy}};
  for (const auto& [key, s] : share_seconds_)
    for (const auto& [resource, field] : kResources) {
      if (field == &ShareSeconds::used_energy && !(s.energy_share > 0)) continue;  // energy never known: absent
      auto l = labels(key);
      l.emplace_back("resource", resource);
      out.sample(l, s.*field);
    }
  out.family("gpuledger_ledger_energy_share_gpu_seconds_total", metrics::MetricType::kCounter,
             "Window GPU-seconds of the account's windows with known busy energy: the denominator of its used energy "
             "share in fleet reports");
  for (const auto& [key, s] : share_seconds_)
    if (s.energy_share > 0) out.sample(labels(key), s.energy_share);
  out.family("gpuledger_ledger_carbon_grams_total", metrics::MetricType::kCounter,
             "Carbon attributed to the account, grams CO2e: its GPU energy (busy and idle) times the carbon "
             "intensity configured when each window was written; absent without one");
  for (const auto& [key, g] : carbon_grams_) out.sample(labels(key), g);
}

void Accountant::record_shares_locked(const WindowRecord& w) {
  std::erase_if(allocated_share_, [&](const auto& kv) { return kv.first.uuid == w.slot.uuid; });
  std::erase_if(used_share_, [&](const auto& kv) { return kv.first.first.uuid == w.slot.uuid; });
  std::map<std::string, AccountLabels> labels;
  for (const auto& a : w.accounts) labels[a.account] = a.labels;
  auto key_of = [&](const std::string& account) { return SeriesKey{export_labels(account, labels[account]), w.slot.uuid}; };
  // A holder whose share is unknown gets no sample: absent, never a guess
  // (allocation_use.h). The same from the store after a restart.
  const std::set<std::string> share_unknown = unknown_allocated_shares(w);
  for (const auto& [account, share] : allocated_shares(w)) allocated_share_[key_of(account)] += share;
  for (const auto& [account, used] : used_shares(w)) {
    const SeriesKey k = key_of(account);
    if (!share_unknown.contains(account)) allocated_share_.try_emplace(k, 0.0);  // a user holding nothing: allocated 0
    used_share_[{k, "activity"}] += used.activity;
    used_share_[{k, "vram"}] += used.vram;
    if (used.energy) used_share_[{k, "energy"}] += *used.energy;
  }
}

void Accountant::write_share_metrics(metrics::ExpositionWriter& out) const {
  auto labels = [](const SeriesKey& k) {
    return metrics::Labels{{"namespace", k.labels.namespace_name}, {"pod", k.labels.pod},
                            {"container", k.labels.container},      {"team", k.labels.team},
                            {"UUID", k.uuid}};
  };
  out.family("gpuledger_gpu_allocated_share_ratio", metrics::MetricType::kGauge,
             "Share of the GPU (or MIG instance) allocated to the account in its last accounted window: 1 whole, 1/N "
             "a time-slicing or MPS replica, a fractional allocation; over-committed shares scaled to add up to 1; "
             "team=\"__unallocated__\" the unallocated rest; 0 for a user that holds no allocation");
  for (const auto& [key, v] : allocated_share_) out.sample(labels(key), v);
  out.family("gpuledger_gpu_used_share_ratio", metrics::MetricType::kGauge,
             "The account's measured share of what the GPU did in its last accounted window, by resource: activity "
             "(attributed busy time), vram (VRAM byte-seconds held) or energy (busy energy)");
  for (const auto& [key, v] : used_share_) {
    auto l = labels(key.first);
    l.emplace_back("resource", key.second);
    out.sample(l, v);
  }
}

void Accountant::record_energy_locked(const WindowRecord& w) {
  if (!w.energy) return;
  for (const auto& c : w.energy->charges) {
    AccountLabels labels;
    for (const auto& a : w.accounts)
      if (a.account == c.account) labels = a.labels;
    energy_millijoules_[{SeriesKey{export_labels(c.account, labels), w.slot.uuid}, c.kind, w.energy->source}] +=
        c.millijoules;
  }
}

void Accountant::write_energy_metrics(metrics::ExpositionWriter& out) const {
  out.family("gpuledger_workload_gpu_energy_joules_total", metrics::MetricType::kCounter,
             "GPU energy attributed to the account, joules, split like its cost: by account, GPU, kind (busy or idle) "
             "and source (dcgm or nvml energy counter, or power_integrated)");
  for (const auto& [key, mj] : energy_millijoules_) {
    const auto& [series, kind, source] = key;
    metrics::Labels l{{"namespace", series.labels.namespace_name}, {"pod", series.labels.pod},
                       {"container", series.labels.container},      {"team", series.labels.team},
                       {"UUID", series.uuid},                       {"kind", std::string(to_string(kind))},
                       {"source", source}};
    out.sample(l, static_cast<double>(mj) / 1e3);
  }
}

void Accountant::write_metrics(metrics::ExpositionWriter& out) const {
  std::lock_guard lock(mu_);
  const auto labels = &Accountant::series_labels;
  out.family("gpuledger_cost_total", metrics::MetricType::kCounter,
             "GPU cost charged, in the currency of the price list, by account, GPU and kind (busy, idle, or memory: the memory part billed by VRAM held)");
  for (const auto& [key, micros] : cost_micros_) {
    auto l = labels(key.first);
    l.emplace_back("kind", std::string(to_string(key.second)));
    out.sample(l, static_cast<double>(micros) / 1e6);
  }
  write_energy_metrics(out);
  out.family("gpuledger_gpu_busy_seconds_total", metrics::MetricType::kCounter,
             "Seconds the GPU (or MIG instance) was busy: device busy fraction, else eBPF spans, times window length");
  for (const auto& [uuid, s] : gpu_busy_seconds_) out.sample({{"UUID", uuid}}, s);
  out.family("gpuledger_gpu_share_ratio", metrics::MetricType::kGauge,
             "Share of the GPU's cost charged to the account in the last accounted window");
  for (const auto& [key, v] : share_) out.sample(labels(key), v);
  write_share_metrics(out);
  out.family("gpuledger_held_gpu_seconds_total", metrics::MetricType::kCounter,
             "GPU-seconds held (reserved) by the account (a MIG instance counts its fraction of a GPU)");
  for (const auto& [key, v] : held_gpu_seconds_) out.sample(labels(key), v);
  out.family("gpuledger_busy_gpu_seconds_total", metrics::MetricType::kCounter,
             "Busy GPU-seconds attributed to the account (a MIG instance counts its fraction of a GPU)");
  for (const auto& [key, v] : busy_gpu_seconds_) out.sample(labels(key), v);
  out.family("gpuledger_ledger_vram_byte_seconds_total", metrics::MetricType::kCounter,
             "GPU memory the account held over time, in byte-seconds, from the ledger's windows");
  for (const auto& [key, v] : vram_byte_seconds_) out.sample(labels(key), v);
  out.family("gpuledger_ledger_launches_total", metrics::MetricType::kCounter,
             "Launches (kernels and graphs) counted for the account in the ledger's windows");
  for (const auto& [key, v] : launches_) out.sample(labels(key), v);
  // Efficiency for fleet reports: weighted / known is the account's average ratio.
  static const char* kRatios[4] = {"sm_active", "sm_occupancy", "tensor_active", "dram_active"};
  auto per_ratio = [&](const std::map<SeriesKey, std::array<double, 4>>& m) {
    for (const auto& [key, v] : m)
      for (int i = 0; i < 4; ++i) {
        auto l = labels(key);
        l.emplace_back("ratio", kRatios[i]);
        out.sample(l, v[i]);
      }
  };
  out.family("gpuledger_ledger_efficiency_weighted_gpu_seconds_total", metrics::MetricType::kCounter,
             "Device efficiency ratio (label ratio) times window GPU-seconds, over the account's windows that had a "
             "device value; divided by gpuledger_ledger_efficiency_known_gpu_seconds_total: the average ratio");
  per_ratio(efficiency_weighted_);
  out.family("gpuledger_ledger_efficiency_known_gpu_seconds_total", metrics::MetricType::kCounter,
             "Window GPU-seconds of the account's windows that had a device value for the ratio (label ratio)");
  per_ratio(efficiency_known_);
  write_share_seconds_metrics(out);
  write_split_metrics(out);
  write_check_metrics(out);
  out.family("gpuledger_ledger_info", metrics::MetricType::kGauge, "The ledger's currency (label), always 1");
  out.sample({{"currency", prices_.currency}}, uint64_t{1});
  out.family("gpuledger_ledger_first_window_timestamp_seconds", metrics::MetricType::kGauge,
             "Start (Unix seconds) of the earliest window the ledger's counters include; absent while empty");
  if (counters_since_) out.sample({}, static_cast<double>(*counters_since_));
  out.family("gpuledger_ledger_windows_total", metrics::MetricType::kCounter,
             "Accounting windows written to the ledger store by this agent");
  out.sample({}, static_cast<uint64_t>(windows_written_));
}

}  // namespace gpuledger::ledger
