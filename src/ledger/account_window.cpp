#include "ledger/account_window.h"

#include <algorithm>
#include <map>
#include <set>

#include "ledger/energy_split.h"
#include "ledger/vram_price.h"

namespace gpuledger::ledger {

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
  wi.nvml_splits_users = in.nvml_splits_processes;
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

}  // namespace gpuledger::ledger
