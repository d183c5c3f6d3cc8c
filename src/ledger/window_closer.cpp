#include "ledger/window_closer.h"

#include <algorithm>
#include <limits>

#include "common/log.h"

namespace gpuledger::ledger {

WindowCloser::WindowCloser(Store& store, const PriceBook& prices, LedgerMetrics& metrics)
    : store_(store), prices_(prices), metrics_(metrics) {
  for (const auto& [key, value] : store_.meta_with_prefix(kRateRemainderKey))
    if (key == kRateRemainderKey) rate_remainders_ = RateRemainders::decode(value);
}

void WindowCloser::close(const ClosingWindow& w, const LastSeen& seen, SlotIntegrator& slots) {
  std::vector<WindowRecord> records;
  std::vector<bool> memory_size_unknown;  // per record: no memory part, the slot's memory unknown
  for (const auto& slot : seen.inventory) {
    bool unknown = false;
    records.push_back(slot_record(w, seen, slots, slot, unknown));
    memory_size_unknown.push_back(unknown);
  }
  // Every slot's window and the counters they were charged up to, in one
  // transaction: a crash leaves both or neither.
  const std::vector<bool> inserted =
      store_.store_windows(records, seen.baseline, {{kRateRemainderKey, rate_remainders_.encode()}});
  for (size_t i = 0; i < records.size(); ++i)
    if (inserted[i]) metrics_.add_window(records[i]);
  note_memory_size_unknown(records, inserted, memory_size_unknown);
  note_probe_set(w, inserted, slots.launches_probed());
  prune(w.start);
}

WindowRecord WindowCloser::slot_record(const ClosingWindow& w, const LastSeen& seen, SlotIntegrator& slots,
                                       const GpuSlot& slot, bool& memory_size_unknown) {
  IntegratedSlot in = slots.window(slot, w.end);
  SlotWindow& sw = in.window;
  for (const auto& h : seen.holders)
    if (h.slot_uuid == slot.uuid) sw.holders.push_back(h);
  const DeviceVerdict verdict = judge_device(slot.uuid, in, slots);
  if (!seen.allocation_known) {
    // No allocation: the users hold the slot, in equal parts of it.
    sw.holders.clear();
    size_t n = 0;
    for (const auto& [a, act] : sw.activity) n += act.any() ? 1 : 0;
    for (const auto& [a, act] : sw.activity)
      if (act.any()) sw.holders.push_back({slot.uuid, a, seen.labels[a], 1.0 / static_cast<double>(n)});
  }
  for (const auto& h : sw.holders) sw.labels[h.account] = seen.labels[h.account];
  for (const auto& [a, act] : sw.activity) sw.labels[a] = seen.labels[a];
  const int64_t cost = rate_remainders_.window_cost(slot.uuid, price_for(prices_, slot), w.end - w.start);
  WindowRecord rec = account_window(prices_, w.start, w.end, sw, w.observed_seconds, w.source, cost);
  (verdict.quality == DeviceQuality::kOk       ? rec.device_quality.ok
   : verdict.quality == DeviceQuality::kSuspect ? rec.device_quality.suspect
                                                : rec.device_quality.absent) = 1;
  rec.device_findings = finding_counts(verdict);
  record_use(in, seen.labels, rec);
  if (rec.cost_micros == 0 && warned_once_.insert(slot.uuid).second)
    spdlog::warn("ledger: GPU {} ({}) has no price: no per_uuid, per_model or default_per_hour entry matches it, "
                 "so its time is billed at 0",
                 slot.uuid, slot.model);
  const MemoryShare memory = memory_share_for(prices_, slot, price_for(prices_, slot), sw.vram_capacity_bytes);
  log_memory_share(slot, memory, sw.vram_capacity_bytes, w.source);
  memory_size_unknown = memory.basis == MemoryShareBasis::kCapacityUnknown;
  return rec;
}

DeviceVerdict WindowCloser::judge_device(const std::string& uuid, IntegratedSlot& in, SlotIntegrator& slots) {
  SlotWindow& sw = in.window;
  WindowWitness w;
  w.window_seconds = static_cast<double>(prices_.window_seconds);
  double spans = 0;
  for (const auto& [account, act] : sw.activity) {
    spans += act.busy_seconds;
    w.nvml_sm_seconds += act.nvml_sm_seconds;
  }
  if (sw.launches_probed) w.span_busy_seconds = spans;  // under the billing probe set no span was timed
  DeviceVerdict v = slots.verdict(uuid, w);
  if (v.quality != DeviceQuality::kSuspect) return v;
  // Suspect values are not used: unknown, never 0 % (device_quality.h).
  auto drop = [&](std::optional<double>& value, CheckedField f) {
    if (v.suspect(f)) value.reset();
  };
  drop(sw.device.sm_active, CheckedField::kSmActive);
  drop(sw.device.sm_occupancy, CheckedField::kSmOccupancy);
  drop(sw.device.tensor_active, CheckedField::kTensorActive);
  drop(sw.device.dram_active, CheckedField::kDramActive);
  if ((in.busy_from_dcgm && v.suspect(CheckedField::kDcgmUtilization)) ||
      (in.busy_from_nvml && v.suspect(CheckedField::kNvmlUtilization)))
    sw.device_busy_fraction.reset();
  for (const auto& f : v.findings)
    if (warned_once_.insert("suspect:" + uuid + ":" + f.field + ":" + f.reason).second)
      spdlog::warn("ledger: GPU {}: its device data is suspect ({} {}): the window's {} is not used for "
                   "efficiency, waste or advice (counted in gpuledger_device_data_suspect_windows_total)",
                   uuid, f.field, f.reason, f.field);
  return v;
}

void WindowCloser::record_use(const IntegratedSlot& in, const std::map<std::string, AccountLabels>& labels,
                              WindowRecord& rec) {
  const SlotUse& use = in.use;
  if (!use.known) return;
  auto seconds = [](const std::map<std::string, double>& m, const std::string& account) {
    auto it = m.find(account);
    return it == m.end() ? 0.0 : std::min(it->second, 1e18);
  };
  std::set<std::string> present;
  for (auto& a : rec.accounts) {
    present.insert(a.account);
    if (is_special_account(a.account)) continue;
    a.used_unallocated_seconds = seconds(use.used_unallocated, a.account);
    // "Ran nothing on it": where the probes (or NVML's samples) saw it work on
    // the slot in this window, the device side missed its processes (a pid
    // it could not map, a device file it could not read): none is counted.
    auto act = in.window.activity.find(a.account);
    const bool worked = act != in.window.activity.end() && act->second.any();
    a.allocated_unused_seconds = worked ? 0.0 : seconds(use.allocated_unused, a.account);
  }
  // A workload that only used the slot (no launch, no span, no VRAM seen) is a record too.
  for (const auto& [account, s] : use.used_unallocated) {
    if (present.contains(account) || s <= 0) continue;
    AccountRecord a;
    a.account = account;
    if (auto l = use.labels.find(account); l != use.labels.end()) a.labels = l->second;
    if (a.labels == AccountLabels{})
      if (auto l = labels.find(account); l != labels.end()) a.labels = l->second;
    a.used_unallocated_seconds = s;
    a.allocated_unused_seconds = 0;
    rec.accounts.push_back(std::move(a));
  }
  std::sort(rec.accounts.begin(), rec.accounts.end(),
            [](const AccountRecord& x, const AccountRecord& y) { return x.account < y.account; });
}

void WindowCloser::log_memory_share(const GpuSlot& slot, const MemoryShare& share, std::optional<double> capacity_bytes,
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

void WindowCloser::note_memory_size_unknown(const std::vector<WindowRecord>& records, const std::vector<bool>& inserted,
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

void WindowCloser::note_probe_set(const ClosingWindow& w, const std::vector<bool>& inserted, bool launches_probed) {
  if (launches_probed || std::find(inserted.begin(), inserted.end(), true) == inserted.end()) return;
  try {  // advisory, like the memory note: the windows are stored
    store_.note_hot_path_not_probed(w.start, w.end);
  } catch (const std::exception& e) {
    spdlog::warn("ledger: could not note the window's probe set in the store: {}", e.what());
  }
}

void WindowCloser::prune(int64_t start) {
  if (start - last_prune_ < 3600) return;
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

}  // namespace gpuledger::ledger
