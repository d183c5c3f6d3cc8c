// The accountant's part in checking the device data (device_quality.h): the
// verdict on each slot's window, the suspect values left out of it, and the
// allocation against use from the device side.
#include "ledger/accountant.h"

#include <algorithm>
#include <set>

#include "common/log.h"

namespace gpuledger::ledger {

DeviceVerdict Accountant::judge_device(const std::string& uuid, SlotWindow& sw, const SlotState* state) {
  WindowWitness w;
  w.window_seconds = static_cast<double>(prices_.window_seconds);
  double spans = 0;
  for (const auto& [account, act] : sw.activity) {
    spans += act.busy_seconds;
    w.nvml_sm_seconds += act.nvml_sm_seconds;
  }
  if (sw.launches_probed) w.span_busy_seconds = spans;  // under the billing probe set no span was timed
  DeviceVerdict v = cross_check_.close(uuid, w);
  if (v.quality != DeviceQuality::kSuspect) return v;
  // Suspect values are not used: unknown, never 0 % (device_quality.h).
  auto drop = [&](std::optional<double>& value, CheckedField f) {
    if (v.suspect(f)) value.reset();
  };
  drop(sw.device.sm_active, CheckedField::kSmActive);
  drop(sw.device.sm_occupancy, CheckedField::kSmOccupancy);
  drop(sw.device.tensor_active, CheckedField::kTensorActive);
  drop(sw.device.dram_active, CheckedField::kDramActive);
  if (state && ((state->busy_dcgm_time > 0 && v.suspect(CheckedField::kDcgmUtilization)) ||
                (state->busy_nvml_time > 0 && v.suspect(CheckedField::kNvmlUtilization))))
    sw.device_busy_fraction.reset();
  for (const auto& f : v.findings)
    if (unpriced_logged_.insert("suspect:" + uuid + ":" + f.field + ":" + f.reason).second)
      spdlog::warn("ledger: GPU {}: its device data is suspect ({} {}): the window's {} is not used for "
                   "efficiency, waste or advice (counted in gpuledger_device_data_suspect_windows_total)",
                   uuid, f.field, f.reason, f.field);
  return v;
}

void Accountant::attribute_use(const Observation& obs, double t0, double t1) {
  const double dt = t1 - t0;
  if (!obs.device_use_known || !obs.allocation_known || dt <= 0) return;
  std::map<std::string, std::set<std::string>> holders, held;  // by slot, by account
  for (const auto& h : obs.holders) {
    if (is_special_account(h.account)) continue;
    holders[h.slot_uuid].insert(h.account);
    held[h.account].insert(h.slot_uuid);
  }
  std::map<std::string, std::string> parent;  // MIG slot -> its GPU
  for (const auto& slot : obs.slots) {
    slots_[slot.uuid].use_known = true;
    if (slot.mig_profile && !slot.parent_uuid.empty()) parent[slot.uuid] = slot.parent_uuid;
  }
  std::map<std::string, std::set<std::string>> used;  // by account: the slots it used
  for (const auto& [account, use] : obs.device_use) {
    if (is_special_account(account)) continue;
    for (const auto& gpu : use.gpus) {
      // The device side names a MIG instance's parent GPU: a holder of
      // instances of it used those, not the GPU's free slices.
      std::set<std::string> instances;
      for (const auto& slot : held[account])
        if (auto p = parent.find(slot); p != parent.end() && p->second == gpu) instances.insert(slot);
      if (instances.empty()) instances.insert(gpu);
      used[account].merge(instances);
    }
  }
  for (const auto& [account, slots] : used)
    for (const auto& slot : slots)
      if (!holders[slot].contains(account)) {
        SlotState& s = slots_[slot];
        s.used_unallocated[account] += dt;
        s.use_labels[account] = obs.device_use.at(account).labels;
      }
  for (const auto& [slot, accounts] : holders)
    for (const auto& account : accounts)
      if (!used[account].contains(slot)) slots_[slot].allocated_unused[account] += dt;
}

void Accountant::record_use(const SlotState* state, WindowRecord& rec) {
  if (!state || !state->use_known) return;
  auto seconds = [](const std::map<std::string, double>& m, const std::string& account) {
    auto it = m.find(account);
    return it == m.end() ? 0.0 : std::min(it->second, 1e18);
  };
  std::set<std::string> present;
  for (auto& a : rec.accounts) {
    present.insert(a.account);
    if (is_special_account(a.account)) continue;
    a.used_unallocated_seconds = seconds(state->used_unallocated, a.account);
    // "Ran nothing on it": where the probes (or NVML's samples) saw it work on
    // the slot in this window, the device side missed its processes (a pid
    // it could not map, a device file it could not read): none is counted.
    auto act = state->activity.find(a.account);
    const bool worked = act != state->activity.end() && act->second.any();
    a.allocated_unused_seconds = worked ? 0.0 : seconds(state->allocated_unused, a.account);
  }
  // A workload that only used the slot (no launch, no span, no VRAM seen) is a record too.
  for (const auto& [account, s] : state->used_unallocated) {
    if (present.contains(account) || s <= 0) continue;
    AccountRecord a;
    a.account = account;
    if (auto l = state->use_labels.find(account); l != state->use_labels.end()) a.labels = l->second;
    if (a.labels == AccountLabels{})
      if (auto l = labels_.find(account); l != labels_.end()) a.labels = l->second;
    a.used_unallocated_seconds = s;
    a.allocated_unused_seconds = 0;
    rec.accounts.push_back(std::move(a));
  }
  std::sort(rec.accounts.begin(), rec.accounts.end(),
            [](const AccountRecord& x, const AccountRecord& y) { return x.account < y.account; });
}

}  // namespace gpuledger::ledger
