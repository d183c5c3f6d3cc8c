#include "ledger/window_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"

namespace gpuledger::ledger {

std::string_view to_string(IdlePolicy policy) {
  switch (policy) {
    case IdlePolicy::kHolders: return "holders";
    case IdlePolicy::kUsage: return "usage";
    case IdlePolicy::kIdle: return "idle";
  }
  return "unknown";
}

IdlePolicy parse_idle_policy(std::string_view text) {
  if (text == "holders") return IdlePolicy::kHolders;
  if (text == "usage") return IdlePolicy::kUsage;
  if (text == "idle") return IdlePolicy::kIdle;
  throw Error("unknown idle policy '" + std::string(text) + "' (expected holders, usage or idle)");
}

std::string_view to_string(ChargeKind kind) { return kind == ChargeKind::kBusy ? "busy" : "idle"; }
std::string_view to_string(BusySource source) { return source == BusySource::kDevice ? "device" : "spans"; }

std::map<std::string, int64_t> largest_remainder(int64_t total, const std::map<std::string, double>& weights) {
  if (total < 0) throw Error("largest_remainder: negative total");
  std::map<std::string, int64_t> out;
  long double sum = 0;
  for (const auto& [key, w] : weights) {
    if (!(w >= 0) || std::isinf(w)) throw Error("largest_remainder: invalid weight for " + key);
    sum += w;
    out[key] = 0;
  }
  if (weights.empty() || total == 0) return out;
  if (!(sum > 0)) throw Error("largest_remainder: all weights are zero");
  struct Rem {
    long double frac;
    const std::string* key;
  };
  std::vector<Rem> rems;
  int64_t given = 0;
  for (const auto& [key, w] : weights) {
    long double exact = static_cast<long double>(total) * (static_cast<long double>(w) / sum);
    long double fl = std::floor(exact);
    int64_t q = std::clamp<int64_t>(static_cast<int64_t>(fl), 0, total);
    out[key] = q;
    given += q;
    rems.push_back({w > 0 ? exact - fl : -1.0L, &key});
  }
  // Largest remainder first; equal remainders by key (the map is already in key order).
  std::stable_sort(rems.begin(), rems.end(), [](const Rem& a, const Rem& b) { return a.frac > b.frac; });
  int64_t left = total - given;
  // Floating error can leave us a unit short or over; fix it deterministically.
  while (left < 0) {
    for (auto it = rems.rbegin(); it != rems.rend() && left < 0; ++it) {
      if (out[*it->key] > 0) {
        --out[*it->key];
        ++left;
      }
    }
  }
  while (left > 0) {
    for (const auto& r : rems) {
      if (left == 0) break;
      if (r.frac < 0) continue;  // zero weight never gets a unit
      ++out[*r.key];
      --left;
    }
  }
  return out;
}

namespace {

void add(std::map<std::pair<std::string, ChargeKind>, int64_t>& acc, const std::map<std::string, int64_t>& parts,
         ChargeKind kind) {
  for (const auto& [account, micros] : parts) acc[{account, kind}] += micros;
}

}  // namespace

WindowSplit split_window(const WindowInput& in) {
  if (in.cost_micros < 0) throw Error("split_window: negative cost");
  std::map<std::string, double> holders;
  for (const auto& h : in.holders) {
    if (h.account.empty()) throw Error("split_window: holder with an empty account");
    if (!(h.weight > 0) || std::isinf(h.weight)) throw Error("split_window: holder weight must be > 0: " + h.account);
    holders[h.account] += h.weight;
  }
  std::map<std::string, Activity> users;
  for (const auto& [account, a] : in.activity) {
    if (account.empty()) throw Error("split_window: activity with an empty account");
    if (a.any()) users[account] = a;
  }

  WindowSplit out;
  // Busy fraction.
  double spans_busy = 0;
  for (const auto& [account, a] : users) spans_busy += std::max(0.0, a.busy_seconds);
  if (in.device_busy_fraction && std::isfinite(*in.device_busy_fraction)) {
    out.busy_source = BusySource::kDevice;
    out.busy_fraction = std::clamp(*in.device_busy_fraction, 0.0, 1.0);
  } else {
    out.busy_source = BusySource::kSpans;
    out.busy_fraction = in.window_seconds > 0 ? std::min(1.0, spans_busy / in.window_seconds) : 0.0;
  }
  // Activity weights: busy seconds, else launches, else VRAM byte-seconds.
  std::map<std::string, double> weights;
  auto fill = [&](auto field) {
    weights.clear();
    double total = 0;
    for (const auto& [account, a] : users) {
      double w = std::max(0.0, static_cast<double>(field(a)));
      if (!std::isfinite(w)) w = 0;
      weights[account] = w;
      total += w;
    }
    return total > 0;
  };
  if (!fill([](const Activity& a) { return a.busy_seconds; }) &&
      !fill([](const Activity& a) { return static_cast<double>(a.launches); }) &&
      !fill([](const Activity& a) { return a.vram_byte_seconds; })) {
    weights.clear();
  }
  double weight_sum = 0;
  for (const auto& [account, w] : weights) weight_sum += w;
  for (const auto& [account, w] : weights)
    if (w > 0) out.activity_share[account] = w / weight_sum;
  std::erase_if(weights, [](const auto& kv) { return !(kv.second > 0); });

  long double exact_busy = static_cast<long double>(in.cost_micros) * out.busy_fraction;
  out.busy_micros = std::clamp<int64_t>(static_cast<int64_t>(std::floor(exact_busy + 0.5L)), 0, in.cost_micros);
  out.idle_micros = in.cost_micros - out.busy_micros;

  std::map<std::pair<std::string, ChargeKind>, int64_t> acc;
  const std::string unallocated(kUnallocatedAccount);
  bool only_holder_uses = holders.size() == 1 && std::all_of(weights.begin(), weights.end(), [&](const auto& kv) {
                            return holders.count(kv.first) > 0;
                          });
  if (only_holder_uses) {
    out.exclusive = true;
    const std::string& holder = holders.begin()->first;
    acc[{holder, ChargeKind::kBusy}] += out.busy_micros;
    acc[{holder, ChargeKind::kIdle}] += out.idle_micros;
  } else {
    // Busy part.
    if (!weights.empty()) {
      add(acc, largest_remainder(out.busy_micros, weights), ChargeKind::kBusy);
    } else if (!holders.empty()) {
      add(acc, largest_remainder(out.busy_micros, holders), ChargeKind::kBusy);
    } else {
      acc[{unallocated, ChargeKind::kBusy}] += out.busy_micros;
    }
    // Idle part.
    if (in.idle_policy == IdlePolicy::kUsage && !weights.empty()) {
      add(acc, largest_remainder(out.idle_micros, weights), ChargeKind::kIdle);
    } else if (holders.empty()) {
      acc[{unallocated, ChargeKind::kIdle}] += out.idle_micros;
    } else if (in.idle_policy == IdlePolicy::kIdle) {
      acc[{std::string(kIdleAccount), ChargeKind::kIdle}] += out.idle_micros;
    } else {
      add(acc, largest_remainder(out.idle_micros, holders), ChargeKind::kIdle);
    }
  }
  for (const auto& [account, w] : holders) acc.try_emplace({account, ChargeKind::kIdle}, 0);
  for (const auto& [key, micros] : acc) {
    bool holder_idle_row = key.second == ChargeKind::kIdle && holders.count(key.first) > 0;
    if (micros == 0 && !holder_idle_row) continue;
    out.charges.push_back({key.first, key.second, micros});
  }
  return out;
}

}  // namespace gpuledger::ledger
