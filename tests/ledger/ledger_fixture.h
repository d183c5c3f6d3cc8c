#pragma once
// A small simulated node for the ledger tests: one H100 shared by two pods,
// one exclusive H100, one idle T4 nobody holds, and a 3g.40gb MIG instance
// held by an idle pod. Two 60 s windows starting at kT0.
//
// Hand computation per window (prices: H100 3.60/h -> 60'000 micro-units per
// 60 s; default 1.80/h -> 30'000; 3g of 7 of an H100 -> 25'714):
//   GPU-shared: device busy 0.6 -> busy 36'000 split 3:1 by busy seconds
//               (pod-a 27'000, pod-b 9'000); idle 24'000 split by the holders
//               (12'000 each).
//   GPU-excl:   pod-c, spans 45 s of 60 -> busy 45'000, idle 15'000.
//   GPU-t4:     no holder -> __unallocated__ 30'000.
//   MIG-d:      pod-d holds it, no activity -> idle 25'714, then 25'715 (each slot's rounding
//               is carried into its next window, rate_remainder.h: 51'428.57 rounded once).
// The first window 175'714, the second 175'715; two windows 351'429.
#include <stdexcept>
#include <string>
#include <vector>

#include "ledger/accountant.h"

namespace gpuledger::testing {

inline constexpr int64_t kT0 = 1'800'000'000;  // 2027-01-15T08:00:00Z, aligned to 60 s

inline const char* kFixturePrices = R"(currency: USD
default_per_hour: 1.80
per_model:
  "H100": 3.60
window_seconds: 60
idle_policy: holders
)";

inline std::vector<ledger::GpuSlot> fixture_slots() {
  return {{"GPU-excl", "NVIDIA H100 80GB HBM3", std::nullopt, ""},
          {"GPU-shared", "NVIDIA H100 80GB HBM3", std::nullopt, ""},
          {"GPU-t4", "Tesla T4", std::nullopt, ""},
          {"MIG-d", "NVIDIA H100 80GB HBM3", "3g.40gb", "GPU-mig"}};
}

inline ledger::AccountLabels labels(const std::string& ns, const std::string& pod, const std::string& team) {
  return {ns, pod, "main", team};
}

// The observation at t (seconds since kT0).
inline ledger::Observation fixture_observation(double t) {
  using namespace ledger;
  Observation o;
  o.time = static_cast<double>(kT0) + t;
  o.slots = fixture_slots();
  o.holders = {{"GPU-shared", "k8s/pod-a", labels("ml", "pod-a", "vision"), 1},
               {"GPU-shared", "k8s/pod-b", labels("nlp", "pod-b", "nlp"), 1},
               {"GPU-excl", "k8s/pod-c", labels("ml", "pod-c", "vision"), 1},
               {"MIG-d", "k8s/pod-d", labels("nlp", "pod-d", "nlp"), 1}};
  o.workloads = {
      {"k8s/pod-a", labels("ml", "pod-a", "vision"), 0.5 * t, static_cast<uint64_t>(10 * t), 1ull << 30, {}, {}, {}},
      {"k8s/pod-b", labels("nlp", "pod-b", "nlp"), t / 6.0, static_cast<uint64_t>(2 * t), 0, {}, {}, {}},
      {"k8s/pod-c", labels("ml", "pod-c", "vision"), 0.75 * t, static_cast<uint64_t>(t), 2ull << 30, {}, {}, {}},
      {"k8s/pod-d", labels("nlp", "pod-d", "nlp"), 0, 0, 0, {}, {}, {}},
  };
  DeviceSample shared;
  shared.busy_fraction = 0.6;
  shared.efficiency.sm_active = 0.5;
  shared.efficiency.sm_occupancy = 0.25;
  o.device["GPU-shared"] = shared;
  return o;
}

// The same with energy readings (energy_ledger_test.cpp's hand computation):
// the shared H100's NVML counter +300 J/s, the exclusive one 200 W of power
// only; the T4 and the MIG instance have none (unknown energy).
inline ledger::Observation fixture_observation_with_energy(double t) {
  ledger::Observation o = fixture_observation(t);
  o.energy["GPU-shared"] = {o.time, 1000.0 + 300.0 * t, ledger::EnergySource::kNvml, 300.0};
  o.energy["GPU-excl"] = {o.time, std::nullopt, ledger::EnergySource::kNvml, 200.0};
  return o;
}

// The window of slot `uuid` among `ws` (throws when there is none).
inline const ledger::WindowRecord& window_of(const std::vector<ledger::WindowRecord>& ws, const std::string& uuid) {
  for (const auto& w : ws)
    if (w.slot.uuid == uuid) return w;
  throw std::runtime_error("no window for " + uuid);
}

// Observations every 10 s over [from, to] (seconds since kT0).
inline void run_fixture(ledger::Accountant& acc, int from, int to) {
  for (int t = from; t <= to; t += 10) acc.observe(fixture_observation(t));
}

// What the windows `ws` charged `account`: its launches and busy seconds.
struct Totals {
  uint64_t launches = 0;
  double busy_seconds = 0;
};

inline Totals accounted(const std::vector<ledger::WindowRecord>& ws, const std::string& account) {
  Totals t;
  for (const auto& w : ws)
    for (const auto& a : w.accounts)
      if (a.account == account) {
        t.launches += a.launches;
        t.busy_seconds += a.busy_seconds;
      }
  return t;
}

}  // namespace gpuledger::testing
