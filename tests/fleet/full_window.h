#pragma once
// Test support: windows with every persisted field away from its default
// (ledger/window_fields.h), values that print long in decimal, a MIG slot,
// device findings and energy; one with every optional unknown. Written field
// by field, not through the field table, so the table is tested against them.
#include <cstdint>

#include "fleet_windows.h"
#include "ledger/store.h"

namespace gpuledger::testing {

inline ledger::WindowRecord full_window(int64_t start, int64_t seed = 0) {
  using namespace ledger;
  WindowRecord w;
  w.start = start;
  w.end = start + 60;
  w.slot = {"MIG-full-" + std::to_string(seed), "NVIDIA A100-SXM4-80GB", "3g.40gb", "GPU-parent"};
  w.gpu_fraction = 3.0 / 7.0;
  w.currency = "EUR";
  w.busy_micros = 36'001 + seed;
  w.idle_micros = 24'003;
  w.memory_micros = 5'007;
  w.cost_micros = w.busy_micros + w.idle_micros + w.memory_micros;
  w.cost_policy = seed % 2 ? "blend" : "allocated";
  w.allocated_total = 1.0 / 3.0 + static_cast<double>(seed);
  w.busy_fraction = 0.1 + 0.2;
  w.busy_source = seed % 2 ? "spans" : "device";
  w.split_source = seed % 2 ? "launches" : "nvml";
  w.exclusive = true;
  w.observed_seconds = 59.999999999999993;
  w.source = seed % 2 ? "partial" : "gap";
  w.device = {0.55 + static_cast<double>(seed) / 1000, 1.0 / 9.0, 2.0 / 3.0, 1e-17};
  w.device_quality = {1 + seed, 2, 3};
  w.device_findings = {{"sm_active:stuck", 4 + seed}, {"dram_active:range", 1}};
  w.accounts = fleet_window(start, w.slot.uuid).accounts;  // one of its accounts, a Slurm job's
  w.accounts.resize(1);
  w.accounts[0].labels.slurm_user = "alice";
  w.accounts[0].labels.slurm_account = "physics";
  AccountRecord& a = w.accounts[0];
  a.efficiency.sm_occupancy = 0.3;
  a.efficiency.tensor_active = 0.2;
  a.allocated_share = 0.625;
  a.allocated_share_known = false;
  a.evidence = {1ull << 33, (1ull << 32) + 7, (1ull << 33) + 1, 1ull << 31, 0.7, 0.35, 0.45, IdleRun{1.5, 2.5, 3.5}, 2};
  a.used_unallocated_seconds = 1.25;
  a.allocated_unused_seconds = 0.5 + static_cast<double>(seed);
  w.charges = {{"k8s/pod-a", ChargeKind::kBusy, w.busy_micros},
               {"k8s/pod-a", ChargeKind::kIdle, w.idle_micros},
               {"k8s/pod-a", ChargeKind::kMemory, w.memory_micros}};
  w.energy = WindowEnergyRecord{18'000'001 + seed, seed % 2 ? "dcgm" : "power_integrated",
                                {{"k8s/pod-a", ChargeKind::kBusy, 14'000'001 + seed},
                                 {"k8s/pod-a", ChargeKind::kIdle, 4'000'000}},
                                400.0 / 3.0};
  return w;
}

// The same window with every optional field unknown (and no energy).
inline ledger::WindowRecord unknown_window(int64_t start) {
  ledger::WindowRecord w = full_window(start);
  w.slot.mig_profile.reset();
  w.device = {};
  w.energy.reset();
  ledger::AccountRecord& a = w.accounts[0];
  a.efficiency = {};
  a.evidence = {};
  a.used_unallocated_seconds.reset();
  a.allocated_unused_seconds.reset();
  return w;
}

}  // namespace gpuledger::testing
