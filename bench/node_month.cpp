#include "node_month.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <vector>

#include "ledger/energy_split.h"
#include "ledger/store.h"
#include "report.h"

namespace gpuledger::bench {

namespace {

constexpr int64_t kMicrosPerHour = 4'100'000;  // 4.10 per GPU-hour

// A deterministic stream of numbers in [0, 1): the same store every run.
struct Lcg {
  uint64_t state = 88172645463325252ull;
  double next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  }
};

// The window's energy as the agent stores it: an NVML counter's growth (100 W
// idle + up to 600 W busy), split like the cost by the real split.
void add_energy(ledger::WindowRecord& w) {
  ledger::WindowInput in;
  in.window_seconds = static_cast<double>(w.end - w.start);
  in.device_busy_fraction = w.busy_fraction;
  for (const auto& a : w.accounts) {
    in.holders.push_back({a.account, 1.0});
    in.activity[a.account] = {a.busy_seconds, a.vram_byte_seconds, a.launches};
  }
  const double watts = 100.0 + 600.0 * w.busy_fraction;
  const ledger::WindowEnergy e{std::llround(watts * in.window_seconds * 1000.0), ledger::EnergySource::kNvml};
  w.energy = ledger::WindowEnergyRecord{e.millijoules, "nvml", ledger::split_window_energy(in, e).charges, 350.0};
}

ledger::WindowRecord window_for(const NodeMonthShape& shape, int gpu, int64_t start, Lcg& rng) {
  ledger::WindowRecord w;
  w.start = start;
  w.end = start + shape.window_seconds;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-8f6e0b2c-1d4a-4c3e-9b7a-%012d", gpu);
  w.slot = {uuid, "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  w.currency = "USD";
  w.cost_micros = (kMicrosPerHour * shape.window_seconds + 1800) / 3600;
  w.busy_fraction = 0.2 + 0.7 * rng.next();
  w.busy_source = "device";
  w.observed_seconds = shape.window_seconds;
  w.device = {w.busy_fraction * 0.9, w.busy_fraction * 0.5, w.busy_fraction * 0.3, 0.1 + 0.2 * rng.next()};
  std::vector<int> holders;
  for (int i = gpu; i < shape.workloads; i += shape.gpus) holders.push_back(i);
  w.exclusive = holders.size() == 1;
  const int64_t busy_total = std::llround(static_cast<double>(w.cost_micros) * w.busy_fraction);
  const int64_t idle_total = w.cost_micros - busy_total;
  std::vector<double> activity;
  double activity_sum = 0;
  for (size_t i = 0; i < holders.size(); ++i) activity_sum += activity.emplace_back(0.2 + rng.next());
  int64_t busy_left = busy_total, idle_left = idle_total;
  for (size_t i = 0; i < holders.size(); ++i) {
    const int n = holders[i];
    ledger::AccountRecord a;
    a.account = "k8s/3c1f9a7e-5b2d-4e8f-a6c1-" + std::to_string(100000000000 + n) + "/main";
    a.labels = {"ns-" + std::to_string(n % 5), "trainer-" + std::to_string(n) + "-7d9f8c6b5-x2k4q", "main",
                "team-" + std::to_string(n % 4)};
    a.held_share = 1.0 / static_cast<double>(holders.size());
    a.activity_share = activity[i] / activity_sum;
    a.gpu_busy_seconds = w.busy_fraction * shape.window_seconds * a.activity_share;
    a.busy_seconds = a.gpu_busy_seconds * 1.1;
    a.vram_byte_seconds = 20e9 * shape.window_seconds;
    a.launches = static_cast<uint64_t>(5000 * a.activity_share);
    a.efficiency = {*w.device.sm_active * a.activity_share, *w.device.sm_occupancy * a.activity_share,
                    *w.device.tensor_active * a.activity_share, *w.device.dram_active * a.activity_share};
    const bool last = i + 1 == holders.size();
    const int64_t busy = last ? busy_left : std::llround(static_cast<double>(busy_total) * a.activity_share);
    const int64_t idle = last ? idle_left : idle_total / static_cast<int64_t>(holders.size());
    busy_left -= busy;
    idle_left -= idle;
    w.charges.push_back({a.account, ledger::ChargeKind::kBusy, busy});
    w.charges.push_back({a.account, ledger::ChargeKind::kIdle, idle});
    w.accounts.push_back(std::move(a));
  }
  w.busy_micros = busy_total;
  w.idle_micros = idle_total;
  add_energy(w);
  return w;
}

}  // namespace

NodeMonthStats write_node_month(const std::string& path, const NodeMonthShape& shape) {
  NodeMonthStats stats;
  const auto began = std::chrono::steady_clock::now();
  {
    ledger::Store store(path);
    Lcg rng;
    const int64_t end = shape.start + int64_t{shape.days} * 86400;
    std::vector<ledger::WindowRecord> batch;
    int64_t last_rollup = shape.start;
    for (int64_t t = shape.start; t < end; t += shape.window_seconds) {
      for (int g = 0; g < shape.gpus; ++g) batch.push_back(window_for(shape, g, t, rng));
      stats.windows_written += shape.gpus;
      for (const auto& w : batch) {
        stats.cost_micros += w.cost_micros;
        if (w.energy) stats.energy_millijoules += w.energy->millijoules;
      }
      store.insert_windows(batch);  // one transaction per window time, as the agent closes them
      batch.clear();
      if (shape.rollup_after_hours > 0 && t - last_rollup >= 3600) {
        last_rollup = t;
        store.roll_up_before(t - int64_t{shape.rollup_after_hours} * 3600, 1);  // as the agent
      }
      if ((t - shape.start) % 86400 == 0 && t > shape.start)
        progress("wrote day %lld of %d", static_cast<long long>((t - shape.start) / 86400), shape.days);
    }
    int64_t stored = 0;
    store.for_each_window(shape.start, end, [&](ledger::WindowRecord&&) { ++stored; });
    stats.windows_stored = stored;
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  stats.bytes = std::filesystem::file_size(path);
  return stats;
}

}  // namespace gpuledger::bench
