#include "ledger/slot_integrator.h"

#include <algorithm>
#include <set>

namespace gpuledger::ledger {

void SlotIntegrator::integrate(const Observation& obs, double t0, double t1,
                               const std::map<std::pair<std::string, std::string>, StreamReading>& streams) {
  const double dt = t1 - t0;
  if (dt <= 0) return;
  integrate_device(obs, t0, t1);
  integrate_use(obs, dt);
  integrate_vram(streams, dt);
}

// Device readings: time-weighted, and into the cross-checks.
void SlotIntegrator::integrate_device(const Observation& obs, double t0, double t1) {
  const double dt = t1 - t0;
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
    s.efficiency.add(d.efficiency, dt);
    if (d.vram_capacity_bytes) s.vram_capacity = d.vram_capacity_bytes;
  }
}

// Allocation against use from the device side over the interval.
void SlotIntegrator::integrate_use(const Observation& obs, double dt) {
  if (!obs.device_use_known || !obs.allocation_known) return;
  std::map<std::string, std::set<std::string>> holders, held;  // by slot, by account
  for (const auto& h : obs.holders) {
    if (is_special_account(h.account)) continue;
    holders[h.slot_uuid].insert(h.account);
    held[h.account].insert(h.slot_uuid);
  }
  std::map<std::string, std::string> parent;  // MIG slot -> its GPU
  for (const auto& slot : obs.slots) {
    slots_[slot.uuid].use.known = true;
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
        SlotUse& u = slots_[slot].use;
        u.used_unallocated[account] += dt;
        u.labels[account] = obs.device_use.at(account).labels;
      }
  for (const auto& [slot, accounts] : holders)
    for (const auto& account : accounts)
      if (!used[account].contains(slot)) slots_[slot].use.allocated_unused[account] += dt;
}

// VRAM held since the previous observation (its live bytes, on its slots),
// and its peak per slot (an account's streams on one slot add up).
void SlotIntegrator::integrate_vram(const std::map<std::pair<std::string, std::string>, StreamReading>& streams,
                                    double dt) {
  std::map<std::pair<std::string, std::string>, uint64_t> held;  // (slot, account)
  for (const auto& [stream, st] : streams) {
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

void SlotIntegrator::add_process_sm(const Observation& obs) {
  for (const auto& uuid : obs.nvml_splits_processes) slots_[uuid].nvml_splits_processes = true;
  for (const auto& [key, seconds] : sm_meter_.take(obs.process_sm))
    slots_[key.first].activity[key.second].nvml_sm_seconds += seconds;
}

void SlotIntegrator::observe_energy(const Observation& obs) {
  for (const auto& [uuid, reading] : obs.energy) energy_meter_.observe(uuid, reading);
}

void SlotIntegrator::remember_nvml_used(const Observation& obs) {
  nvml_used_.clear();
  for (const auto& w : obs.workloads)
    for (const auto& [uuid, bytes] : w.nvml_used_bytes) nvml_used_[{w.account, uuid}] = bytes;
}

IntegratedSlot SlotIntegrator::window(const GpuSlot& slot, int64_t end) {
  IntegratedSlot out;
  SlotWindow& sw = out.window;
  sw.slot = slot;
  if (auto it = slots_.find(slot.uuid); it != slots_.end()) {
    const SlotState& s = it->second;
    sw.activity = s.activity;
    if (s.busy_time > 0) sw.device_busy_fraction = s.busy_weighted / s.busy_time;
    sw.device = s.efficiency.mean();
    sw.vram_capacity_bytes = s.vram_capacity;
    sw.vram_peak_bytes = s.vram_peak;
    sw.nvml_vram_peak_bytes = s.nvml_peak;
    out.busy_from_dcgm = s.busy_dcgm_time > 0;
    out.busy_from_nvml = s.busy_nvml_time > 0;
    out.use = s.use;
    sw.nvml_splits_processes = s.nvml_splits_processes;
  }
  sw.launches_probed = launches_probed();
  sw.energy = energy_meter_.take(slot.uuid, static_cast<double>(end));
  return out;
}

void SlotIntegrator::next_window() {
  slots_.clear();
  hot_path_unprobed_ = false;
}

}  // namespace gpuledger::ledger
