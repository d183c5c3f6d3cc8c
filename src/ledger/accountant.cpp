#include "ledger/accountant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "common/log.h"
#include "ledger/allocation_use.h"

namespace gpuledger::ledger {

namespace {

// An observation's names: a workload's when it has some, a holder's where none was known.
void learn_labels(std::map<std::string, AccountLabels>& labels, const Observation& obs) {
  for (const auto& h : obs.holders)
    if (!labels.count(h.account) || labels[h.account] == AccountLabels{}) labels[h.account] = h.labels;
  for (const auto& w : obs.workloads)
    if (!(w.labels == AccountLabels{})) labels[w.account] = w.labels;
}

}  // namespace

namespace {
std::optional<double> scaled(const std::optional<double>& v, double f) {
  return v ? std::optional<double>(*v * f) : std::nullopt;
}

// The window's energy split like its cost (energy_split.h); unknown stays unknown.
std::optional<WindowEnergyRecord> energy_record(const WindowInput& window, const std::optional<WindowEnergy>& energy) {
  if (!energy) return std::nullopt;
  EnergySplit split = split_window_energy(window, *energy);
  return WindowEnergyRecord{energy->millijoules, std::string(to_string(energy->source)), std::move(split.charges),
                            std::nullopt};
}

}  // namespace

namespace {
// Under the billing probe set no launch is seen, so "held without launches"
// says nothing: a holder of the `seconds`-long window is idle when NVML
// sampled no SM time of its and, where NVML sampled nobody on the slot, the
// device was not busy either. An unknown busy fraction counts as busy: no
// advice to give up a GPU rests on missing evidence.
IdleRun idle_without_launches(const SlotWindow& in, const std::string& account, double held_share, double seconds) {
  if (held_share <= 0) return {};
  auto it = in.activity.find(account);
  if (it != in.activity.end() && (it->second.nvml_sm_seconds > 0 || it->second.launches > 0)) return {};
  bool someone_sampled = false;
  for (const auto& [other, act] : in.activity) someone_sampled = someone_sampled || act.nvml_sm_seconds > 0;
  if (!someone_sampled && in.device_busy_fraction.value_or(1.0) > 0) return {};
  return {seconds, seconds, seconds};
}
}  // namespace

WindowRecord account_window(const PriceBook& prices, int64_t start, int64_t end, const SlotWindow& in,
                            double observed_seconds, const std::string& source, std::optional<int64_t> cost_micros) {
  const SlotPrice price = price_for(prices, in.slot);
  const double len = static_cast<double>(end - start);
  WindowInput wi;
  wi.cost_micros = cost_micros ? *cost_micros : window_cost_micros(price, end - start);
  wi.window_seconds = len;
  for (const auto& h : in.holders) wi.holders.push_back({h.account, h.weight, h.share_known});
  wi.activity = in.activity;
  wi.device_busy_fraction = in.device_busy_fraction;
  wi.idle_policy = prices.idle_policy;
  wi.cost_policy = prices.cost_policy;
  wi.blend_allocated_weight = prices.blend_allocated_weight;
  wi.memory_price_share = memory_share_for(prices, in.slot, price, in.vram_capacity_bytes).share;
  wi.vram_capacity_bytes = in.vram_capacity_bytes;
  const WindowSplit split = split_window(wi);

  WindowRecord r;
  r.start = start;
  r.end = end;
  r.slot = in.slot;
  r.gpu_fraction = price.gpu_fraction();
  r.currency = prices.currency;
  r.cost_micros = wi.cost_micros;
  r.busy_micros = split.busy_micros;
  r.idle_micros = split.idle_micros;
  r.memory_micros = split.memory_micros;
  r.cost_policy = std::string(to_string(prices.cost_policy));
  r.allocated_total = split.allocated_total;
  r.busy_fraction = split.busy_fraction;
  r.busy_source = std::string(to_string(split.busy_source));
  r.split_source = std::string(to_string(split.split_source));
  r.split_disagreement = split.split_disagreement;
  r.exclusive = split.exclusive;
  r.observed_seconds = std::clamp(observed_seconds, 0.0, len);
  r.source = source;
  r.device = in.device;
  r.charges = split.charges;
  r.energy = energy_record(wi, in.energy);
  if (r.energy) r.energy->carbon_g_per_kwh = prices.carbon_g_per_kwh;

  std::map<std::string, double> held;
  std::set<std::string> share_unknown;  // holders with any allocation of unknown share
  double held_total = 0;
  for (const auto& h : wi.holders) {
    held[h.account] += h.weight;
    held_total += h.weight;
    if (!h.share_known) share_unknown.insert(h.account);
  }
  std::set<std::string> names;
  for (const auto& [a, w] : held) names.insert(a);
  for (const auto& [a, act] : in.activity)
    if (act.any()) names.insert(a);
  for (const auto& c : split.charges) names.insert(c.account);
  const double busy_s = split.busy_fraction * len;
  const bool users = !split.activity_share.empty();
  for (const auto& name : names) {
    AccountRecord a;
    a.account = name;
    if (auto it = in.labels.find(name); it != in.labels.end()) a.labels = it->second;
    a.held_share = held.count(name) ? held[name] / held_total : 0;
    a.allocated_share = held.count(name) ? held[name] : 0;
    a.allocated_share_known = !share_unknown.contains(name);
    if (auto it = in.activity.find(name); it != in.activity.end()) {
      a.busy_seconds = it->second.busy_seconds;
      a.vram_byte_seconds = it->second.vram_byte_seconds;
      a.launches = it->second.launches;
    }
    auto share = split.activity_share.find(name);
    a.activity_share = share == split.activity_share.end() ? 0 : share->second;
    if (split.exclusive) {
      a.gpu_busy_seconds = busy_s;
    } else if (users) {
      a.gpu_busy_seconds = busy_s * a.activity_share;
    } else if (held_total > 0) {
      a.gpu_busy_seconds = busy_s * a.held_share;
    } else if (name == kUnallocatedAccount) {
      a.gpu_busy_seconds = busy_s;
    }
    if (!in.launches_probed) a.evidence.idle = idle_without_launches(in, name, a.held_share, len);
    if (auto it = in.vram_peak_bytes.find(name); it != in.vram_peak_bytes.end()) a.evidence.vram_peak_bytes = it->second;
    if (auto it = in.nvml_vram_peak_bytes.find(name); it != in.nvml_vram_peak_bytes.end())
      a.evidence.nvml_vram_peak_bytes = it->second;
    if (!is_special_account(name)) {
      double f = split.exclusive ? 1.0 : a.activity_share;
      a.efficiency = {scaled(in.device.sm_active, f), scaled(in.device.sm_occupancy, f),
                      scaled(in.device.tensor_active, f), scaled(in.device.dram_active, f)};
    }
    r.accounts.push_back(std::move(a));
  }
  return r;
}

Accountant::Accountant(Store& store, PriceBook prices, int64_t max_backfill_seconds)
    : store_(store),
      prices_(std::move(prices)),
      metrics_(prices_.currency),
      clock_(prices_.window_seconds, max_backfill_seconds, store_.last_window_end()) {
  for (const auto& [key, value] : store_.meta_with_prefix(kRateRemainderKey))
    if (key == kRateRemainderKey) rate_remainders_ = RateRemainders::decode(value);
  // The counters on /metrics continue from the ledger, across restarts.
  metrics_.load(store_.totals(), store_.first_window_start());
  store_.for_each_window(INT64_MIN, INT64_MAX, [&](WindowRecord&& w) { metrics_.add_stored(w); });
}

void Accountant::attribute(const Observation& obs, double t0, double t1) {
  const double dt = t1 - t0;
  if (dt <= 0) return;
  // Device readings: time-weighted.
  for (const auto& [uuid, d] : obs.device) {
    SlotState& s = slots_[uuid];
    if (d.busy_fraction) {
      s.busy_weighted += *d.busy_fraction * dt;
      s.busy_time += dt;
      (d.checks.empty() || d.checks[CheckedField::kDcgmUtilization] ? s.busy_dcgm_time : s.busy_nvml_time) += dt;
    }
    if (d.checks.empty()) {
      // A sample without its sources told apart (tests, older callers): judged as one source.
      CheckSample c;
      c[CheckedField::kSmActive] = d.efficiency.sm_active;
      c[CheckedField::kSmOccupancy] = d.efficiency.sm_occupancy;
      c[CheckedField::kTensorActive] = d.efficiency.tensor_active;
      c[CheckedField::kDramActive] = d.efficiency.dram_active;
      c[CheckedField::kDcgmUtilization] = d.busy_fraction;
      cross_check_.observe(uuid, t0, t1, c);
    } else {
      cross_check_.observe(uuid, t0, t1, d.checks);
    }
    auto add = [&](const char* name, const std::optional<double>& v) {
      if (v) {
        s.eff[name].first += *v * dt;
        s.eff[name].second += dt;
      }
    };
    add("sm_active", d.efficiency.sm_active);
    add("sm_occupancy", d.efficiency.sm_occupancy);
    add("tensor_active", d.efficiency.tensor_active);
    add("dram_active", d.efficiency.dram_active);
    if (d.vram_capacity_bytes) s.vram_capacity = d.vram_capacity_bytes;
  }
  attribute_use(obs, t0, t1);
  // VRAM held since the previous observation (its live bytes, on its slots),
  // and its peak per slot (an account's streams on one slot add up).
  std::map<std::pair<std::string, std::string>, uint64_t> held;  // (slot, account)
  for (const auto& [stream, st] : deltas_.streams()) {
    const std::string& account = stream.first;
    for (const auto& uuid : st.slots) held[{uuid, account}] += st.live_bytes / st.slots.size();
    if (st.live_bytes == 0 || st.slots.empty()) continue;
    for (const auto& uuid : st.slots)
      slots_[uuid].activity[account].vram_byte_seconds +=
          static_cast<double>(st.live_bytes) * dt / static_cast<double>(st.slots.size());
  }
  for (const auto& [key, bytes] : held) {
    uint64_t& peak = slots_[key.first].vram_peak[key.second];
    peak = std::max(peak, bytes);
  }
  for (const auto& [key, bytes] : nvml_used_) {
    uint64_t& peak = slots_[key.second].nvml_peak[key.first];
    peak = std::max(peak, bytes);
  }
}

// The first observation opens its window: the counters' baseline (this
// observation's, or the stored one of the same counter set), backfill.
void Accountant::first_observation(const Observation& obs, const HeldSlots& held) {
  add_process_sm(obs);  // the baseline
  const bool restored = deltas_.take_baseline(obs, store_.counter_baseline());
  holders_ = obs.holders;
  inventory_ = obs.slots;
  allocation_known_ = obs.allocation_known;
  for (const auto& h : obs.holders) labels_[h.account] = h.labels;
  for (int64_t start : clock_.backfill_before(obs.time)) close_window(start, 0, "backfill");
  clock_.open(obs.time);
  if (restored) add_deltas(obs, held);  // since the last stored window, into this one
  deltas_.remember(obs, held);
  for (const auto& w : obs.workloads) {
    for (const auto& [uuid, bytes] : w.nvml_used_bytes) nvml_used_[{w.account, uuid}] = bytes;
    if (!w.labels.namespace_name.empty() || !w.labels.team.empty() || !w.labels.slurm_account.empty() ||
        !labels_.count(w.account))
      labels_[w.account] = w.labels;
  }
}

void Accountant::add_deltas(const Observation& obs, const HeldSlots& held) {
  add_process_sm(obs);
  deltas_.add(obs, held, [this](const std::string& slot, const std::string& account) -> Activity& {
    return slots_[slot].activity[account];
  });
}

// What the next observation's deltas and windows start from: this one's
// holders, inventory, names and counters.
void Accountant::remember(const Observation& obs, const HeldSlots& held) {
  clock_.seen(obs.time);
  holders_ = obs.holders;
  inventory_ = obs.slots;
  allocation_known_ = obs.allocation_known;
  learn_labels(labels_, obs);
  deltas_.remember(obs, held);
  nvml_used_.clear();
  for (const auto& w : obs.workloads)
    for (const auto& [uuid, bytes] : w.nvml_used_bytes) nvml_used_[{w.account, uuid}] = bytes;
}

void Accountant::observe(const Observation& obs) {
  const double t = obs.time;
  observe_energy(obs);
  const HeldSlots held = held_slots(obs);
  if (!clock_.started()) {
    first_observation(obs, held);
    return;
  }
  if (clock_.went_back(t)) return;  // the clock went back: wait for it
  // The deltas since the last observation go to the window open then, and so
  // does the probe set they were counted under (and to the next, if it holds).
  hot_path_unprobed_ = hot_path_unprobed_ || !obs.hot_path_probed;

  // The deltas since the last observation go to the window open then, once.
  bool deltas_added = false;
  auto add_deltas_once = [&] {
    if (deltas_added) return;
    deltas_added = true;
    add_deltas(obs, held);
  };
  // Names that came with this observation name the accounts of the window it
  // closes: a Slurm job's user and account come from its controller a moment
  // after the job starts, and its first window is its own as much as the rest.
  learn_labels(labels_, obs);
  bool watched = true;  // windows after the first closed here had no observation inside: "gap"
  while (const auto w = clock_.next_closed_by(t, watched)) {
    attribute(obs, w->from, static_cast<double>(w->end));
    add_deltas_once();
    if (w->store) close_window(w->start, w->observed_seconds, w->source);
    clock_.closed(*w);
    watched = false;
    holders_ = obs.holders;
  }
  attribute(obs, clock_.last_time(), t);
  add_deltas_once();
  hot_path_unprobed_ = hot_path_unprobed_ || !obs.hot_path_probed;
  deltas_.forget_unseen_baseline(obs, clock_.first_time(), static_cast<double>(prices_.window_seconds));
  remember(obs, held);
  // The accounts live or holding a GPU now are seen (series_retirement.h).
  std::vector<AccountLabels> seen;
  for (const auto& w : obs.workloads) seen.push_back(export_labels(w.account, labels_[w.account]));
  for (const auto& h : obs.holders) seen.push_back(export_labels(h.account, labels_[h.account]));
  metrics_.seen(seen, t);
}

void Accountant::retire_series_after(double seconds) { metrics_.retire_after(seconds); }

void Accountant::store_window_in_progress() {
  const auto w = clock_.in_progress();
  if (!w) return;
  close_window(w->start, w->observed_seconds, w->source);
  clock_.stored(*w);
}

void Accountant::close_window(int64_t start, double observed_seconds, const std::string& source) {
  const int64_t L = prices_.window_seconds;
  std::vector<WindowRecord> records;
  std::vector<bool> memory_size_unknown;  // per record: no memory part, the slot's memory unknown
  for (const auto& slot : inventory_) {
    SlotWindow sw;
    sw.slot = slot;
    for (const auto& h : holders_)
      if (h.slot_uuid == slot.uuid) sw.holders.push_back(h);
    auto it = slots_.find(slot.uuid);
    if (it != slots_.end()) {
      const SlotState& s = it->second;
      sw.activity = s.activity;
      if (s.busy_time > 0) sw.device_busy_fraction = s.busy_weighted / s.busy_time;
      auto avg = [&](const char* name) -> std::optional<double> {
        auto e = s.eff.find(name);
        if (e == s.eff.end() || e->second.second <= 0) return std::nullopt;
        return e->second.first / e->second.second;
      };
      sw.device = {avg("sm_active"), avg("sm_occupancy"), avg("tensor_active"), avg("dram_active")};
      sw.vram_capacity_bytes = s.vram_capacity;
      sw.vram_peak_bytes = s.vram_peak;
      sw.nvml_vram_peak_bytes = s.nvml_peak;
    }
    sw.launches_probed = !hot_path_unprobed_;
    const DeviceVerdict verdict = judge_device(slot.uuid, sw, it != slots_.end() ? &it->second : nullptr);
    if (!allocation_known_) {
      // No allocation: the users hold the slot, in equal parts of it.
      sw.holders.clear();
      size_t n = 0;
      for (const auto& [a, act] : sw.activity) n += act.any() ? 1 : 0;
      for (const auto& [a, act] : sw.activity)
        if (act.any()) sw.holders.push_back({slot.uuid, a, labels_[a], 1.0 / static_cast<double>(n)});
    }
    sw.energy = energy_meter_.take(slot.uuid, static_cast<double>(start + L));
    for (const auto& h : sw.holders) sw.labels[h.account] = labels_[h.account];
    for (const auto& [a, act] : sw.activity) sw.labels[a] = labels_[a];
    const int64_t cost = rate_remainders_.window_cost(slot.uuid, price_for(prices_, slot), L);
    WindowRecord rec = account_window(prices_, start, start + L, sw, observed_seconds, source, cost);
    (verdict.quality == DeviceQuality::kOk       ? rec.device_quality.ok
     : verdict.quality == DeviceQuality::kSuspect ? rec.device_quality.suspect
                                                  : rec.device_quality.absent) = 1;
    rec.device_findings = finding_counts(verdict);
    record_use(it != slots_.end() ? &it->second : nullptr, rec);
    if (rec.cost_micros == 0 && unpriced_logged_.insert(slot.uuid).second)
      spdlog::warn("ledger: GPU {} ({}) has no price: no per_uuid, per_model or default_per_hour entry matches it, "
                   "so its time is billed at 0",
                   slot.uuid, slot.model);
    const MemoryShare memory = memory_share_for(prices_, slot, price_for(prices_, slot), sw.vram_capacity_bytes);
    log_memory_share(slot, memory, sw.vram_capacity_bytes, source);
    memory_size_unknown.push_back(memory.basis == MemoryShareBasis::kCapacityUnknown);
    records.push_back(std::move(rec));
  }
  // Every slot's window and the counters they were charged up to, in one
  // transaction: a crash leaves both or neither.
  const std::vector<bool> inserted =
      store_.store_windows(records, deltas_.baseline(), {{kRateRemainderKey, rate_remainders_.encode()}});
  for (size_t i = 0; i < records.size(); ++i)
    if (inserted[i]) metrics_.add_window(records[i]);
  note_memory_size_unknown(records, inserted, memory_size_unknown);
  if (hot_path_unprobed_ && std::find(inserted.begin(), inserted.end(), true) != inserted.end()) {
    try {  // advisory, like the note above: the windows are stored
      store_.note_hot_path_not_probed(start, start + L);
    } catch (const std::exception& e) {
      spdlog::warn("ledger: could not note the window's probe set in the store: {}", e.what());
    }
  }
  hot_path_unprobed_ = false;
  slots_.clear();
  // Names of accounts neither live nor holding a GPU now: the windows that
  // needed them are written, and a retired workload's never come back.
  std::erase_if(labels_, [&](const auto& kv) {
    return !deltas_.live(kv.first) &&
           std::none_of(holders_.begin(), holders_.end(), [&](const HolderEntry& h) { return h.account == kv.first; });
  });
  if (start - last_prune_ >= 3600) {
    last_prune_ = start;
    if (prices_.retention_days > 0) {
      int64_t gone = store_.delete_before(start - int64_t{prices_.retention_days} * 86400);
      if (gone > 0) spdlog::info("ledger: retention deleted {} windows", gone);
    }
    if (prices_.rollup_after_hours > 0) {
      // A day per hour at most: a store from before roll-ups catches up without stalling the window loop.
      int64_t merged = store_.roll_up_before(start - int64_t{prices_.rollup_after_hours} * 3600, 1);
      if (merged > 0) spdlog::info("ledger: merged {} windows into hourly ones", merged);
    }
  }
}

void Accountant::log_memory_share(const GpuSlot& slot, const MemoryShare& share, std::optional<double> capacity_bytes,
                                  const std::string& source) {
  if (share.basis == MemoryShareBasis::kCapped && memory_price_logged_.insert("model:" + slot.model).second)
    spdlog::warn("ledger: vram_per_gib_hour x the memory of {} ({:.2f} GiB, GPU {}) is more than its price per hour: "
                 "its whole price is billed as memory (the memory share is capped at 1)",
                 slot.model, capacity_bytes.value_or(0) / (1024.0 * 1024.0 * 1024.0), slot.uuid);
  if (share.basis != MemoryShareBasis::kCapacityUnknown) return;
  // Windows written for time the agent was down never have a reading: said once, not per slot.
  if (source == "backfill") {
    if (memory_price_logged_.insert("backfill").second)
      spdlog::warn("ledger: the windows written for the time the agent was down have no memory reading: "
                   "vram_per_gib_hour bills no memory part in them, their whole price goes by cost_policy");
    return;
  }
  if (memory_price_logged_.insert("slot:" + slot.uuid).second)
    spdlog::warn("ledger: the memory size of {} {} ({}) is unknown ({}): vram_per_gib_hour bills no memory part for "
                 "its windows while it stays unknown, and its whole price goes by cost_policy",
                 slot.mig_profile ? "MIG slot" : "GPU", slot.uuid, slot.model,
                 slot.mig_profile ? "the ledger has no memory reading per MIG instance"
                                  : "no DCGM or NVML memory reading in the window");
}

void Accountant::note_memory_size_unknown(const std::vector<WindowRecord>& records, const std::vector<bool>& inserted,
                                          const std::vector<bool>& unknown) {
  std::vector<std::string> uuids;
  for (size_t i = 0; i < records.size(); ++i)
    if (inserted[i] && unknown[i] && records[i].cost_micros > 0) uuids.push_back(records[i].slot.uuid);
  if (uuids.empty()) return;
  // Advisory (for the reports' notes): the windows are stored, a failure here must not undo them.
  try {
    store_.note_memory_size_unknown(uuids, records.front().start, records.front().end);
  } catch (const std::exception& e) {
    spdlog::warn("ledger: could not note the slots of unknown memory size in the store: {}", e.what());
  }
}

void Accountant::observe_energy(const Observation& obs) {
  for (const auto& [uuid, reading] : obs.energy) energy_meter_.observe(uuid, reading);
}

void Accountant::add_process_sm(const Observation& obs) {
  for (const auto& [key, seconds] : sm_meter_.take(obs.process_sm))
    slots_[key.first].activity[key.second].nvml_sm_seconds += seconds;
  metrics_.set_unattributed_sm(sm_meter_.unattributed_seconds());
}

uint64_t Accountant::windows_written() const { return metrics_.windows_written(); }
void Accountant::write_metrics(metrics::ExpositionWriter& out) const { metrics_.write(out); }

}  // namespace gpuledger::ledger
