// The ledger's metric families (ledger_metrics.h): what each window adds to
// the series on /metrics, and their exposition.
#include "ledger/ledger_metrics.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "ledger/allocation_use.h"
#include "ledger/window_split.h"

namespace gpuledger::ledger {

AccountLabels export_labels(const std::string& account, const AccountLabels& labels) {
  if (is_special_account(account)) return AccountLabels{"", "", "", account, "", ""};
  // No Slurm user or account (the store's, not /metrics'): a job's series
  // stays one when the controller first answers.
  return {labels.namespace_name, labels.pod, labels.container, labels.team, "", ""};
}

void LedgerMetrics::load(const LedgerTotals& totals, std::optional<int64_t> first_window_start) {
  std::lock_guard lock(mu_);
  counters_since_ = first_window_start;
  for (const auto& c : totals.cost)
    cost_micros_[{SeriesKey{export_labels(c.account, c.labels), c.uuid}, c.kind}] += c.micros;
  for (const auto& s : totals.seconds) {
    SeriesKey k{export_labels(s.account, s.labels), s.uuid};
    held_gpu_seconds_[k] += s.held_gpu_seconds;
    busy_gpu_seconds_[k] += s.busy_gpu_seconds;
    vram_byte_seconds_[k] += s.vram_byte_seconds;
    launches_[k] += s.launches;
    for (int i = 0; i < 4; ++i) {
      efficiency_weighted_[k][i] += s.efficiency_weighted[i];
      efficiency_known_[k][i] += s.efficiency_known[i];
    }
  }
  for (const auto& [uuid, s] : totals.gpu_busy_seconds) gpu_busy_seconds_[uuid] += s;
  for (const auto& e : totals.energy)
    energy_millijoules_[{SeriesKey{export_labels(e.account, e.labels), e.uuid}, e.kind, e.source}] += e.millijoules;
}

// Not SQL sums: a window's shares need all of its accounts (allocation_use.h).
void LedgerMetrics::add_stored(const WindowRecord& w) {
  std::lock_guard lock(mu_);
  add_share_seconds_locked(w);
  count_split_locked(w);
  count_checks_locked(w);
}

void LedgerMetrics::add_window(const WindowRecord& w) {
  std::lock_guard lock(mu_);
  ++windows_written_;
  if (!counters_since_ || w.start < *counters_since_) counters_since_ = w.start;
  record_locked(w);
}

void LedgerMetrics::set_unattributed_sm(std::map<std::string, ProcessSmMeter::Unattributed> by_slot) {
  std::lock_guard lock(mu_);
  unattributed_sm_ = std::move(by_slot);
}

uint64_t LedgerMetrics::windows_written() const {
  std::lock_guard lock(mu_);
  return windows_written_;
}

void LedgerMetrics::record_locked(const WindowRecord& w) {
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

metrics::Labels LedgerMetrics::series_labels(const SeriesKey& k) {
  return metrics::Labels{{"namespace", k.labels.namespace_name}, {"pod", k.labels.pod},
                          {"container", k.labels.container},      {"team", k.labels.team},
                          {"UUID", k.uuid}};
}

void LedgerMetrics::add_share_seconds_locked(const WindowRecord& w) {
  std::map<std::string, AccountLabels> labels;
  for (const auto& a : w.accounts) labels[a.account] = a.labels;
  auto key_of = [&](const std::string& account) { return SeriesKey{export_labels(account, labels[account]), w.slot.uuid}; };
  for (const auto& [account, s] : share_seconds(w)) share_seconds_[key_of(std::string(account))] += s;
  for (const auto& [account, grams] : carbon_grams(w)) carbon_grams_[key_of(account)] += grams;
}

void LedgerMetrics::record_shares_locked(const WindowRecord& w) {
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

void LedgerMetrics::record_energy_locked(const WindowRecord& w) {
  if (!w.energy) return;
  for (const auto& c : w.energy->charges) {
    AccountLabels labels;
    for (const auto& a : w.accounts)
      if (a.account == c.account) labels = a.labels;
    energy_millijoules_[{SeriesKey{export_labels(c.account, labels), w.slot.uuid}, c.kind, w.energy->source}] +=
        c.millijoules;
  }
}

void LedgerMetrics::count_split_locked(const WindowRecord& w) {
  ++split_windows_[{w.slot.uuid, w.split_source.empty() ? "unknown" : w.split_source}];
  if (w.split_disagreement) ++split_disagreements_[w.slot.uuid];
}

void LedgerMetrics::count_checks_locked(const WindowRecord& w) {
  const auto& q = w.device_quality;
  if (q.ok) quality_windows_[{w.slot.uuid, "ok"}] += static_cast<uint64_t>(q.ok);
  if (q.suspect) quality_windows_[{w.slot.uuid, "suspect"}] += static_cast<uint64_t>(q.suspect);
  if (q.absent) quality_windows_[{w.slot.uuid, "absent"}] += static_cast<uint64_t>(q.absent);
  for (const auto& [key, n] : w.device_findings) {
    const size_t colon = key.find(':');
    if (colon == std::string::npos || n <= 0) continue;
    suspect_windows_[{w.slot.uuid, key.substr(0, colon), key.substr(colon + 1)}] += static_cast<uint64_t>(n);
  }
  for (const auto& a : w.accounts) {
    if (is_special_account(a.account)) continue;
    const SeriesKey k{export_labels(a.account, a.labels), w.slot.uuid};
    if (a.used_unallocated_seconds) used_unallocated_[k] += *a.used_unallocated_seconds;
    if (a.allocated_unused_seconds) allocated_unused_[k] += *a.allocated_unused_seconds;
  }
}

void LedgerMetrics::seen(const std::vector<AccountLabels>& accounts, double now) {
  std::lock_guard lock(mu_);
  if (!stored_series_seen_) {
    stored_series_seen_ = true;
    for (const auto& [key, micros] : cost_micros_) retirement_.seen(key.first.labels, now);
    for (const auto& [key, s] : held_gpu_seconds_) retirement_.seen(key.labels, now);
    for (const auto& [key, mj] : energy_millijoules_) retirement_.seen(std::get<0>(key).labels, now);
  }
  for (const auto& labels : accounts) retirement_.seen(labels, now);
  retire_locked(now);
}

void LedgerMetrics::retire_after(double seconds) {
  std::lock_guard lock(mu_);
  retirement_.set_after(seconds);
}

void LedgerMetrics::retire_locked(double now) {
  const auto due = retirement_.due(now);
  if (due.empty()) return;
  auto gone = [&](const SeriesKey& k) { return std::find(due.begin(), due.end(), k.labels) != due.end(); };
  auto drop = [&](auto& series, auto key_of) {
    std::erase_if(series, [&](const auto& kv) { return gone(key_of(kv.first)); });
  };
  auto itself = [](const SeriesKey& k) -> const SeriesKey& { return k; };
  auto first = [](const auto& k) -> const SeriesKey& { return k.first; };
  drop(cost_micros_, first);
  drop(energy_millijoules_, [](const auto& k) -> const SeriesKey& { return std::get<0>(k); });
  drop(held_gpu_seconds_, itself);
  drop(busy_gpu_seconds_, itself);
  drop(share_, itself);
  drop(vram_byte_seconds_, itself);
  drop(allocated_share_, itself);
  drop(used_share_, first);
  drop(launches_, itself);
  drop(efficiency_weighted_, itself);
  drop(efficiency_known_, itself);
  drop(share_seconds_, itself);
  drop(carbon_grams_, itself);
  spdlog::debug("ledger: the series of {} accounts gone for over {} s left /metrics", due.size(), retirement_.after());
}

void LedgerMetrics::write(metrics::ExpositionWriter& out) const {
  std::lock_guard lock(mu_);
  const auto labels = &LedgerMetrics::series_labels;
  // A family with one sample per account series.
  auto per_series = [&](const char* name, metrics::MetricType type, const char* help, const auto& series) {
    out.family(name, type, help);
    for (const auto& [key, v] : series) out.sample(labels(key), v);
  };
  out.family("gpuledger_cost_total", metrics::MetricType::kCounter,
             "GPU cost charged, in the currency of the price list, by account, GPU and kind (busy, idle, or memory: the memory part billed by VRAM held)");
  for (const auto& [key, micros] : cost_micros_) {
    auto l = labels(key.first);
    l.emplace_back("kind", std::string(to_string(key.second)));
    out.sample(l, static_cast<double>(micros) / 1e6);
  }
  write_energy(out);
  out.family("gpuledger_gpu_busy_seconds_total", metrics::MetricType::kCounter,
             "Seconds the GPU (or MIG instance) was busy: device busy fraction, else eBPF spans, times window length");
  for (const auto& [uuid, s] : gpu_busy_seconds_) out.sample({{"UUID", uuid}}, s);
  per_series("gpuledger_gpu_share_ratio", metrics::MetricType::kGauge,
             "Share of the GPU's cost charged to the account in the last accounted window", share_);
  write_shares(out);
  per_series("gpuledger_held_gpu_seconds_total", metrics::MetricType::kCounter,
             "GPU-seconds held (reserved) by the account (a MIG instance counts its fraction of a GPU)",
             held_gpu_seconds_);
  per_series("gpuledger_busy_gpu_seconds_total", metrics::MetricType::kCounter,
             "Busy GPU-seconds attributed to the account (a MIG instance counts its fraction of a GPU)",
             busy_gpu_seconds_);
  per_series("gpuledger_ledger_vram_byte_seconds_total", metrics::MetricType::kCounter,
             "GPU memory the account held over time, in byte-seconds, from the ledger's windows", vram_byte_seconds_);
  per_series("gpuledger_ledger_launches_total", metrics::MetricType::kCounter,
             "Launches (kernels and graphs) counted for the account in the ledger's windows", launches_);
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
  write_share_seconds(out);
  write_split(out);
  write_checks(out);
  out.family("gpuledger_ledger_info", metrics::MetricType::kGauge, "The ledger's currency (label), always 1");
  out.sample({{"currency", currency_}}, uint64_t{1});
  out.family("gpuledger_ledger_first_window_timestamp_seconds", metrics::MetricType::kGauge,
             "Start (Unix seconds) of the earliest window the ledger's counters include; absent while empty");
  if (counters_since_) out.sample({}, static_cast<double>(*counters_since_));
  out.family("gpuledger_ledger_windows_total", metrics::MetricType::kCounter,
             "Accounting windows written to the ledger store by this agent");
  out.sample({}, static_cast<uint64_t>(windows_written_));
}

void LedgerMetrics::write_energy(metrics::ExpositionWriter& out) const {
  out.family("gpuledger_workload_gpu_energy_joules_total", metrics::MetricType::kCounter,
             "GPU energy attributed to the account, joules, split like its cost: by account, GPU, kind (busy or idle) "
             "and source (dcgm or nvml energy counter, or power_integrated)");
  for (const auto& [key, mj] : energy_millijoules_) {
    const auto& [series, kind, source] = key;
    metrics::Labels l = series_labels(series);
    l.emplace_back("kind", std::string(to_string(kind)));
    l.emplace_back("source", source);
    out.sample(l, static_cast<double>(mj) / 1e3);
  }
}

void LedgerMetrics::write_shares(metrics::ExpositionWriter& out) const {
  out.family("gpuledger_gpu_allocated_share_ratio", metrics::MetricType::kGauge,
             "Share of the GPU (or MIG instance) allocated to the account in its last accounted window: 1 whole, 1/N "
             "a time-slicing or MPS replica, a fractional allocation; over-committed shares scaled to add up to 1; "
             "team=\"__unallocated__\" the unallocated rest; 0 for a user that holds no allocation");
  for (const auto& [key, v] : allocated_share_) out.sample(series_labels(key), v);
  out.family("gpuledger_gpu_used_share_ratio", metrics::MetricType::kGauge,
             "The account's measured share of what the GPU did in its last accounted window, by resource: activity "
             "(attributed busy time), vram (VRAM byte-seconds held) or energy (busy energy)");
  for (const auto& [key, v] : used_share_) {
    auto l = series_labels(key.first);
    l.emplace_back("resource", key.second);
    out.sample(l, v);
  }
}

void LedgerMetrics::write_share_seconds(metrics::ExpositionWriter& out) const {
  const auto labels = &LedgerMetrics::series_labels;
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

void LedgerMetrics::write_split(metrics::ExpositionWriter& out) const {
  out.family("gpuledger_ledger_split_windows_total", metrics::MetricType::kCounter,
             "Accounting windows in the ledger by GPU and the evidence that split their busy part among the users "
             "(split_source: nvml per-process SM samples, spans, launches, vram, none; spans-unattributed and "
             "launches-unattributed: NVML's samples were mostly of processes of no known workload; unknown: written "
             "before gpuledger recorded it)");
  for (const auto& [key, n] : split_windows_) out.sample({{"UUID", key.first}, {"split_source", key.second}}, n);
  out.family("gpuledger_ledger_split_disagreements_total", metrics::MetricType::kCounter,
             "Windows written since the agent started where NVML's per-process SM time split the busy part and the "
             "eBPF span shares differed from it by more than 10 points for some user (NVML's split was used)");
  for (const auto& [uuid, n] : split_disagreements_) out.sample({{"UUID", uuid}}, n);
  out.family("gpuledger_nvml_unattributed_sm_seconds_total", metrics::MetricType::kCounter,
             "SM-seconds NVML's per-process samples gave processes no workload could be named for, since the agent "
             "started; billed to __unattributed__, never to the named users");
  for (const auto& [uuid, u] : unattributed_sm_) out.sample({{"gpu", u.gpu}, {"UUID", uuid}}, u.seconds);
}

void LedgerMetrics::write_checks(metrics::ExpositionWriter& out) const {
  out.family("gpuledger_device_data_suspect_windows_total", metrics::MetricType::kCounter,
             "Accounting windows whose device data failed a cross-check, by GPU, field (a DCGM profiling field, "
             "dcgm_utilization, nvml_utilization, or the source: dcgm, nvml) and reason (zero_while_busy: reads 0 "
             "while utilisation and the probes say busy; frozen: unchanged while the others move; stopped: the "
             "source stopped updating). The suspect values are not used for efficiency, waste or advice");
  for (const auto& [key, n] : suspect_windows_)
    out.sample({{"UUID", std::get<0>(key)}, {"field", std::get<1>(key)}, {"reason", std::get<2>(key)}}, n);
  out.family("gpuledger_device_data_windows_total", metrics::MetricType::kCounter,
             "Accounting windows by GPU and the quality of their device data (ok, suspect, absent: no DCGM or NVML "
             "reading); windows written before gpuledger judged it are not counted");
  for (const auto& [key, n] : quality_windows_) out.sample({{"UUID", key.first}, {"quality", key.second}}, n);
  out.family("gpuledger_gpu_used_unallocated_seconds_total", metrics::MetricType::kCounter,
             "Seconds the account's processes used a GPU it was not allocated, from the device side (NVML's process "
             "lists, the /dev/nvidiaN its processes hold open), by account and GPU");
  for (const auto& [k, v] : used_unallocated_) out.sample(series_labels(k), v);
  out.family("gpuledger_gpu_allocated_unused_seconds_total", metrics::MetricType::kCounter,
             "Seconds the account was allocated a GPU on which none of its processes ran, from the device side "
             "(NVML's process lists, the /dev/nvidiaN its processes hold open), by account and GPU");
  for (const auto& [k, v] : allocated_unused_) out.sample(series_labels(k), v);
}

}  // namespace gpuledger::ledger
