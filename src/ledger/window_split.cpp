#include "ledger/window_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "common/largest_remainder.h"

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

std::string_view to_string(ChargeKind kind) {
  switch (kind) {
    case ChargeKind::kBusy: return "busy";
    case ChargeKind::kIdle: return "idle";
    case ChargeKind::kMemory: return "memory";
  }
  return "unknown";
}

ChargeKind parse_charge_kind(std::string_view text) {
  if (text == "busy") return ChargeKind::kBusy;
  if (text == "idle") return ChargeKind::kIdle;
  if (text == "memory") return ChargeKind::kMemory;
  throw Error("unknown charge kind '" + std::string(text) + "'");
}

std::string_view to_string(CostPolicy policy) {
  switch (policy) {
    case CostPolicy::kUsage: return "usage";
    case CostPolicy::kAllocated: return "allocated";
    case CostPolicy::kBlend: return "blend";
  }
  return "unknown";
}

CostPolicy parse_cost_policy(std::string_view text) {
  if (text == "usage") return CostPolicy::kUsage;
  if (text == "allocated") return CostPolicy::kAllocated;
  if (text == "blend") return CostPolicy::kBlend;
  throw Error("unknown cost policy '" + std::string(text) + "' (expected usage, allocated or blend)");
}
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
  std::vector<int64_t> units;
  std::vector<long double> remainders;  // -1: a weight of 0, never a unit
  int64_t given = 0;
  for (const auto& [key, w] : weights) {
    long double exact = static_cast<long double>(total) * (static_cast<long double>(w) / sum);
    long double fl = std::floor(exact);
    int64_t q = std::clamp<int64_t>(static_cast<int64_t>(fl), 0, total);
    units.push_back(q);
    given += q;
    remainders.push_back(w > 0 ? exact - fl : -1.0L);
  }
  // Floating error can leave the floors a unit over: taken back, never below 0.
  settle_remainders(units, remainders, total - given, true);
  size_t i = 0;
  for (auto& [key, part] : out) part = units[i++];
  return out;
}

namespace {

using Weights = std::map<std::string, double>;
using Acc = std::map<std::pair<std::string, ChargeKind>, int64_t>;

void add(Acc& acc, const std::map<std::string, int64_t>& parts, ChargeKind kind) {
  for (const auto& [account, micros] : parts) acc[{account, kind}] += micros;
}

int64_t round_half_up(long double exact, int64_t max) {
  return std::clamp<int64_t>(static_cast<int64_t>(std::floor(exact + 0.5L)), 0, max);
}

// Who a part goes to: `allocated_cut` of it (0, 1, or the blend weight) by the
// allocated targets, the rest by the usage targets.
struct Targets {
  const Weights& usage;
  const Weights& allocated;
  double allocated_cut;
};

void distribute(Acc& acc, int64_t total, ChargeKind kind, const Targets& t) {
  const int64_t by_allocation = round_half_up(static_cast<long double>(total) * t.allocated_cut, total);
  if (by_allocation > 0) add(acc, largest_remainder(by_allocation, t.allocated), kind);
  if (total - by_allocation > 0) add(acc, largest_remainder(total - by_allocation, t.usage), kind);
}

Weights only(std::string_view account) { return {{std::string(account), 1.0}}; }

// The part of the weights that is __unattributed__'s.
double unattributed_share(const Weights& weights) {
  double sum = 0;
  for (const auto& [account, w] : weights) sum += w;
  auto it = weights.find(std::string(kUnattributedAccount));
  return it == weights.end() || !(sum > 0) ? 0 : it->second / sum;
}

// The activity weights of the users by the best evidence the window has (the
// contract in window_split.h); sets split_source, activity_share and the
// disagreement of `out`.
Weights activity_weights(const std::map<std::string, Activity>& users, bool nvml_splits_users, WindowSplit& out) {
  Weights weights;
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
  // The best evidence first (the contract above); the first with any weight decides.
  auto spans = [](const Activity& a) { return a.busy_seconds; };
  auto launches = [](const Activity& a) { return static_cast<double>(a.launches); };
  // One user needs no split; two are weighed by NVML only where it samples
  // each of them (WindowInput::nvml_splits_users).
  const bool nvml_usable = nvml_splits_users || users.size() < 2;
  if (nvml_usable && fill([](const Activity& a) { return a.nvml_sm_seconds; })) out.split_source = SplitSource::kNvml;
  else if (fill(spans)) out.split_source = SplitSource::kSpans;
  else if (fill(launches)) out.split_source = SplitSource::kLaunches;
  else if (fill([](const Activity& a) { return a.vram_byte_seconds; })) out.split_source = SplitSource::kVram;
  else weights.clear();
  if (out.split_source == SplitSource::kNvml && unattributed_share(weights) > kUnattributedFallbackShare) {
    // Mostly nobody's processes: NVML cannot say who of the named did what.
    const Weights by_nvml = weights;
    if (fill(spans)) out.split_source = SplitSource::kSpansUnattributed;
    else if (fill(launches)) out.split_source = SplitSource::kLaunchesUnattributed;
    else weights = by_nvml;  // no other evidence: the unattributed part stays nobody's
  }
  auto shares_of = [](const Weights& ws) {
    std::map<std::string, double> shares;
    double sum = 0;
    for (const auto& [account, w] : ws) sum += w;
    for (const auto& [account, w] : ws)
      if (w > 0) shares[account] = w / sum;
    return shares;
  };
  out.activity_share = shares_of(weights);
  if (out.split_source == SplitSource::kNvml) {
    // The device's evidence wins; where the spans tell another story, say by how much.
    Weights by_nvml = weights;
    if (fill(spans)) {
      out.split_disagreement_points = largest_share_gap_points(out.activity_share, shares_of(weights));
      out.split_disagreement = out.split_disagreement_points > kSplitDisagreementPoints;
    }
    weights = std::move(by_nvml);
  }
  return weights;
}

}  // namespace

WindowSplit split_window(const WindowInput& in) {
  if (in.cost_micros < 0) throw Error("split_window: negative cost");
  if (!(in.blend_allocated_weight >= 0 && in.blend_allocated_weight <= 1))
    throw Error("split_window: blend_allocated_weight must be in [0,1]");
  if (!(in.memory_price_share >= 0 && in.memory_price_share <= 1))
    throw Error("split_window: memory_price_share must be in [0,1]");
  Weights holders;
  bool share_unknown = false;
  for (const auto& h : in.holders) {
    share_unknown = share_unknown || !h.share_known;
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
  Weights weights = activity_weights(users, in.nvml_splits_users, out);
  std::erase_if(weights, [](const auto& kv) { return !(kv.second > 0); });

  // The memory part first, then busy and idle parts of the rest.
  out.memory_micros = round_half_up(static_cast<long double>(in.cost_micros) * in.memory_price_share, in.cost_micros);
  const int64_t compute = in.cost_micros - out.memory_micros;
  out.busy_micros = round_half_up(static_cast<long double>(compute) * out.busy_fraction, compute);
  out.idle_micros = compute - out.busy_micros;

  // Allocated targets: shares as held, the rest unallocated, over-commitment scaled down.
  for (const auto& [account, w] : holders) out.allocated_total += w;
  out.allocation_unknown = share_unknown;
  out.overcommitted = !share_unknown && out.allocated_total > 1 + 1e-9;
  Weights allocated = holders;
  if (out.allocated_total < 1 - 1e-9) allocated[std::string(kUnallocatedAccount)] += 1 - out.allocated_total;
  const double cut = in.cost_policy == CostPolicy::kAllocated ? 1.0
                     : in.cost_policy == CostPolicy::kBlend   ? in.blend_allocated_weight
                                                              : 0.0;

  // Usage targets (the cases of the contract).
  const bool only_holder_uses = holders.size() == 1 && std::all_of(weights.begin(), weights.end(), [&](const auto& kv) {
                                  return holders.count(kv.first) > 0;
                                });
  out.exclusive = only_holder_uses;
  Weights busy_to, idle_to;
  if (only_holder_uses) {
    busy_to = idle_to = only(holders.begin()->first);
  } else {
    busy_to = !weights.empty() ? weights : !holders.empty() ? holders : only(kUnallocatedAccount);
    if (in.idle_policy == IdlePolicy::kUsage && !weights.empty()) idle_to = weights;
    else if (holders.empty()) idle_to = only(kUnallocatedAccount);
    else if (in.idle_policy == IdlePolicy::kIdle) idle_to = only(kIdleAccount);
    else idle_to = holders;
  }

  // With a share unknown the allocation-based cut goes by activity (the
  // users), else like the usage part it stands beside.
  auto allocated_for = [&](const Weights& usage_targets) -> const Weights& {
    return !share_unknown ? allocated : !weights.empty() ? weights : usage_targets;
  };
  Acc acc;
  distribute(acc, out.busy_micros, ChargeKind::kBusy, {busy_to, allocated_for(busy_to), cut});
  distribute(acc, out.idle_micros, ChargeKind::kIdle, {idle_to, allocated_for(idle_to), cut});
  if (out.memory_micros > 0) {
    // VRAM held, by byte-seconds; "" (never an account) stands for the unheld rest.
    Weights memory;
    double held = 0;
    for (const auto& [account, a] : users)
      if (a.vram_byte_seconds > 0 && std::isfinite(a.vram_byte_seconds)) {
        memory[account] = a.vram_byte_seconds;
        held += a.vram_byte_seconds;
      }
    double unheld = held > 0 ? 0 : 1;
    // A capacity that is not a finite positive number (a bad reading) is no capacity.
    const double capacity = in.vram_capacity_bytes ? *in.vram_capacity_bytes * in.window_seconds : 0;
    if (std::isfinite(capacity) && capacity > 0) unheld = std::max(0.0, capacity - held);
    if (unheld > 0) memory[""] = unheld;
    auto parts = largest_remainder(out.memory_micros, memory);
    const int64_t unheld_micros = parts[""];
    parts.erase("");
    add(acc, parts, ChargeKind::kMemory);
    Weights unheld_to = idle_to;
    if (!only_holder_uses && in.idle_policy == IdlePolicy::kUsage && !weights.empty() && held > 0) {
      unheld_to = memory;
      unheld_to.erase("");
    }
    distribute(acc, unheld_micros, ChargeKind::kMemory, {unheld_to, allocated_for(unheld_to), cut});
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
