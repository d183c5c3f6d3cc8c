#pragma once
// The cost model's prices, from YAML (--prices FILE, or a `cost:` section):
//
//   currency: USD                  # a label only; amounts are in its units
//   default_per_hour: 2.00         # any GPU nothing else prices (default 0)
//   per_model:                     # matched on the GPU's model name:
//     "NVIDIA H100 80GB HBM3": 4.10  #   an exact (case-sensitive) match first,
//     "A100": 3.00                 #   else the longest key contained in the
//                                  #   name, ignoring case (ties: first in file)
//   per_uuid:                      # exact UUID; beats per_model and the default
//     GPU-8f6e...: 3.00
//     MIG-1a2b...: 0.50            # a MIG instance's own price (not scaled)
//   mig_slices: 7                  # or a map: {default: 7, "A30": 4};
//                                  # built-in: 4 for A30-class, else 7
//   window_seconds: 60             # accounting window, aligned to the clock
//   idle_policy: holders           # holders | usage | idle (window_split.h)
//   retention_days: 365            # windows older than this are deleted (0: keep all)
//   rollup_after_hours: 24         # windows older than this are merged into hours
//                                  # (hourly_rollup.h; 0: keep every window)
//   cost_policy: usage             # usage | allocated | blend (window_split.h,
//                                  # docs/ledger.md): bill by activity, by
//                                  # allocated share, or a blend of the two
//   blend_allocated_weight: 0.5    # blend: the part billed by allocation, [0,1]
//   memory_price_share: 0.3        # the part of each GPU's price that is for its
//                                  # memory, [0,1] (default 0): billed by VRAM
//                                  # GiB-hours held, the rest by cost_policy
//   vram_per_gib_hour: 0.0135      # or: a price per GiB-hour of VRAM held; each
//                                  # slot's memory share is then derived from it
//                                  # (vram_price.h); not with memory_price_share
//   carbon_g_per_kwh: 350          # grid carbon intensity, gCO2e per kWh: each
//                                  # window's energy is stored with it, and
//                                  # reports show carbon (absent: no carbon)
//
// Prices are per GPU-hour with at most 6 decimals (micro-units), parsed as
// decimals, never as binary floats. A MIG instance whose UUID is not priced
// costs the parent's price x n / slices, n from its "<n>g.<mem>gb" profile.
// Unknown keys, negative or malformed amounts: Error naming file:line:column.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ledger/window_split.h"

namespace gpuledger::ledger {

// One thing a window is accounted for: a physical GPU, or a MIG instance of one.
struct GpuSlot {
  std::string uuid;                        // GPU-... or MIG-...
  std::string model;                       // e.g. "NVIDIA H100 80GB HBM3" (the parent's for MIG)
  std::optional<std::string> mig_profile;  // e.g. "3g.40gb"; empty for a whole GPU
  std::string parent_uuid;                 // for MIG: the physical GPU
  bool operator==(const GpuSlot&) const = default;
};

struct PriceBook {
  std::string currency = "USD";
  int64_t default_micros_per_hour = 0;
  std::vector<std::pair<std::string, int64_t>> per_model;  // in file order
  std::vector<std::pair<std::string, int64_t>> per_uuid;
  std::optional<int> mig_slices_default;                   // overrides the built-in rule
  std::vector<std::pair<std::string, int>> mig_slices_per_model;
  int window_seconds = 60;
  IdlePolicy idle_policy = IdlePolicy::kHolders;
  int retention_days = 365;
  int rollup_after_hours = 24;
  std::optional<double> carbon_g_per_kwh;
  CostPolicy cost_policy = CostPolicy::kUsage;
  double blend_allocated_weight = 0.5;
  double memory_price_share = 0;
  // A price per GiB-hour of VRAM (micro-units), when configured: the memory
  // share of each slot is derived from it (vram_price.h) instead of being
  // memory_price_share, which must then be 0.
  std::optional<int64_t> vram_micros_per_gib_hour;
};

PriceBook parse_prices(const std::string& yaml_text, const std::string& source_name = "<prices>");
PriceBook load_prices(const std::string& path);
// The `cost:` section of the agent's configuration file (--config), nullopt
// when it has none: the rest of that file is not a price list.
std::optional<PriceBook> parse_cost_section(const std::string& yaml_text, const std::string& source_name = "<config>");
std::optional<PriceBook> load_cost_section(const std::string& path);

// "3g.40gb" -> 3; "1c.2g.20gb" -> 2; nullopt when there is no "<n>g." part.
std::optional<int> mig_profile_slices(const std::string& profile);

struct SlotPrice {
  int64_t micros_per_hour = 0;  // of the priced unit (the parent GPU for a scaled MIG price)
  int64_t numerator = 1;        // the slot's share of that unit: numerator / denominator
  int64_t denominator = 1;
  std::string matched;          // "uuid:<id>", "model:<key>", "default"
  double gpu_fraction() const { return static_cast<double>(numerator) / static_cast<double>(denominator); }
};

// Throws Error for a MIG slot whose profile has no "<n>g." part or n > slices.
SlotPrice price_for(const PriceBook& book, const GpuSlot& slot);
int mig_slices_for(const PriceBook& book, const std::string& model);

// Cost of `window_seconds` of the slot, in micro-units, rounded half up:
// micros_per_hour x numerator x seconds / (denominator x 3600).
int64_t window_cost_micros(const SlotPrice& price, int64_t window_seconds);

}  // namespace gpuledger::ledger
