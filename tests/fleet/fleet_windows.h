#pragma once
// Test support: consistent windows for the fleet tests (charges add up to the
// cost, energy parts to the GPU's energy), distinct per (start, slot).
#include <string>

#include "ledger/store.h"

namespace gpuledger::testing {

inline constexpr int64_t kFleetT0 = 1'800'000'000;  // 2027-01-15T08:00:00Z

inline ledger::WindowRecord fleet_window(int64_t start, const std::string& uuid, int64_t seed = 0) {
  using namespace ledger;
  WindowRecord w;
  w.start = start;
  w.end = start + 60;
  w.slot = {uuid, "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  w.busy_micros = 36'000 + seed;
  w.idle_micros = 24'000;
  w.memory_micros = 0;
  w.cost_micros = w.busy_micros + w.idle_micros;
  w.busy_fraction = 0.6;
  w.busy_source = "device";
  w.observed_seconds = 60;
  w.allocated_total = 1;
  w.device = {0.55, 0.25, std::nullopt, 0.125};
  AccountRecord a;
  a.account = "k8s/pod-a";
  a.labels = {"ml", "pod-a", "main", "vision"};
  a.held_share = a.allocated_share = 0.5;
  a.busy_seconds = 27.25;
  a.activity_share = 0.75;
  a.gpu_busy_seconds = 27;
  a.vram_byte_seconds = 1.5e12;
  a.launches = 600;
  a.efficiency = {0.4125, std::nullopt, std::nullopt, 0.1};
  a.evidence.vram_peak_bytes = 1ull << 33;
  AccountRecord b = a;
  b.account = "k8s/pod-b";
  b.labels = {"nlp", "pod-b", "main", "nlp"};
  b.busy_seconds = 9.1;
  b.activity_share = 0.25;
  b.gpu_busy_seconds = 9;
  b.launches = 120;
  w.accounts = {a, b};
  const int64_t a_busy = 27'000 + seed;
  w.charges = {{"k8s/pod-a", ChargeKind::kBusy, a_busy}, {"k8s/pod-a", ChargeKind::kIdle, 12'000},
               {"k8s/pod-b", ChargeKind::kBusy, w.busy_micros - a_busy}, {"k8s/pod-b", ChargeKind::kIdle, 12'000}};
  w.energy = WindowEnergyRecord{18'000'000, "nvml",
                                {{"k8s/pod-a", ChargeKind::kBusy, 10'000'000},
                                 {"k8s/pod-a", ChargeKind::kIdle, 4'000'000},
                                 {"k8s/pod-b", ChargeKind::kBusy, 2'000'000},
                                 {"k8s/pod-b", ChargeKind::kIdle, 2'000'000}},
                                400.0};
  return w;
}

}  // namespace gpuledger::testing
