// One unit's recommendation from its evidence and what it paid and held
// (rightsizing_decision.h; the order and rules: rightsizing.h, docs/rightsizing.md).
#include "report/rightsizing_decision.h"

#include <algorithm>

#include "ledger/allocation_use.h"
#include "ledger/mig_profiles.h"
#include "report/report_text.h"

namespace gpuledger::report {

int64_t mul_div_half_up(int64_t a, int64_t b, int64_t c) {
  if (c <= 0) return 0;
  const __int128 n = static_cast<__int128>(a) * b;
  return static_cast<int64_t>((n + c / 2) / c);
}

namespace {

std::string gib(uint64_t bytes) { return fixed(static_cast<double>(bytes) / 1e9, 2) + " GB"; }

std::string duration_words(double seconds) {
  if (seconds >= 86400 && static_cast<int64_t>(seconds) % 3600 == 0)
    return fixed(seconds / 86400.0, seconds / 86400.0 == static_cast<int64_t>(seconds / 86400.0) ? 0 : 1) + " d";
  if (seconds >= 3600) return fixed(seconds / 3600.0, 1) + " h";
  return fixed(seconds / 60.0, 0) + " min";
}

std::string pct_text(double v) { return fixed(v * 100.0, 1) + "%"; }

// Whether `peak` x (1 + headroom) fits `bytes`, exactly (headroom in millionths).
bool fits(uint64_t peak, int64_t headroom_micros, uint64_t bytes) {
  return static_cast<unsigned __int128>(peak) * static_cast<unsigned __int128>(1'000'000 + headroom_micros) <=
         static_cast<unsigned __int128>(bytes) * 1'000'000u;
}

}  // namespace

Decision decide(const UnitFacts& f, const RightsizingEvidence& e, const RightsizingOptions& o) {
  Decision d;
  const bool device_sm = e.sm_source == "device";
  // 1. release: held with no work for longer than idle_after.
  if (f.held_seconds > 0 && e.idle_seconds_longest > static_cast<double>(o.idle_after_seconds)) {
    d.advice = Advice::kRelease;
    d.saving = f.idle_paid;
    d.why = "held a GPU with no kernel launch for " + duration_words(e.idle_seconds_longest) + " (more than idle_after " +
            duration_words(static_cast<double>(o.idle_after_seconds)) + ")";
    return d;
  }
  // 2. more: an over-user of a shared GPU, or saturated.
  if (f.shares.share > 0 && !(f.shares.allocated_unknown > 0)) {
    const double allocated = f.shares.allocated / f.shares.share, used = f.shares.used_activity / f.shares.share;
    if (ledger::share_flag(allocated, used) == ledger::ShareFlag::kOver) {
      d.advice = Advice::kMore;
      d.why = allocated > 0 ? "used " + fixed(used, 2) + " of its GPU's activity with " + fixed(allocated, 2) +
                                  " allocated: an over-user of a shared GPU"
                            : "used " + fixed(used, 2) + " of the activity of a GPU it holds no allocation of: it "
                                                         "should hold one";
      return d;
    }
  }
  if (e.sm_active_p95 && *e.sm_active_p95 >= kSaturatedSmActive) {
    d.advice = Advice::kMore;
    d.limited = !device_sm;
    d.why = "SM active p95 " + pct_text(*e.sm_active_p95) + " of its GPU: saturated" +
            (device_sm ? "" : " (the eBPF span estimate: no device counters in its windows)");
    return d;
  }
  const std::optional<ledger::MigTable> table =
      e.models.size() == 1 ? o.mig.for_model(e.models.front()) : std::nullopt;
  const int held_slices = f.held_slices;
  if (table && held_slices > 0) {
    // 3. mig: the smallest profile that fits, smaller than what it holds.
    if (!e.vram_peak_bytes) {
      d.limited = true;
      d.why = "its VRAM peak is unknown (no probe or NVML reading in its windows): whether it fits a MIG profile is "
              "not known";
      return d;
    }
    if (!e.sm_active_p95) {
      d.limited = true;
      d.why = "its SM active is unknown: whether it fits a MIG profile is not known";
      return d;
    }
    for (const auto& p : table->profiles) {
      if (p.compute_slices >= held_slices) break;
      if (!fits(*e.vram_peak_bytes, o.vram_headroom_micros, p.memory_bytes)) continue;
      // SM active is of what it holds (the whole GPU's, or a MIG instance's
      // own): n of the GPU's slices cover it when SM active x held slices <= n.
      if (*e.sm_active_p95 * held_slices > p.compute_slices + 1e-9) continue;
      // Its windows cost the price of its held slices; the profile's n of them cost n / held of that.
      const int64_t saving = f.paid - mul_div_half_up(f.held_window_cost, p.compute_slices, held_slices);
      if (saving <= 0) break;  // it pays less than the slice would cost: not a saving
      d.advice = Advice::kMig;
      d.target = p.name;
      d.saving = saving;
      d.limited = !device_sm;
      d.why = "VRAM peak " + gib(*e.vram_peak_bytes) + " with " + fixed(o.vram_headroom_micros / 1e4, 0) +
              "% headroom fits " + p.name + " (" + gib(p.memory_bytes) + "), and SM active p95 " +
              pct_text(*e.sm_active_p95) + " fits its " + std::to_string(p.compute_slices) + "/" +
              std::to_string(table->slices) + " of the compute" +
              (device_sm ? "" : "; SM active is the eBPF span estimate (no device counters in its windows), so no "
                                "saving is stated");
      return d;
    }
    d.limited = !device_sm;
    d.why = "needs VRAM " + gib(*e.vram_peak_bytes) + " +" + fixed(o.vram_headroom_micros / 1e4, 0) +
            "% and SM active p95 " + pct_text(*e.sm_active_p95) + ": no smaller " + table->model + " MIG profile fits" +
            (device_sm ? "" : " (SM active is the eBPF span estimate: no device counters in its windows)");
    return d;
  }
  if (!table && !f.mig_slot && f.held_seconds > 0) {
    // 4. time-slice: the smallest share that covers its busy share, below what it holds.
    const double held_fraction = f.present_seconds > 0 ? f.held_seconds / f.present_seconds : 0;
    for (int k : {8, 4, 2}) {
      const double share = 1.0 / k;
      if (share + 1e-9 < e.busy_share || share + 1e-9 >= held_fraction) continue;
      const int64_t saving = f.paid - mul_div_half_up(f.held_window_cost, 1, k);
      if (saving <= 0) continue;
      d.advice = Advice::kTimeSlice;
      d.target = "1/" + std::to_string(k);
      d.saving = saving;
      d.limited = !f.device_busy;
      d.why = "busy " + pct_text(e.busy_share) + " of what it held: a 1/" + std::to_string(k) +
              " time-slice share covers it" +
              (f.device_busy ? "" : "; the busy share is the eBPF span estimate (no device busy reading), so no "
                                    "saving is stated");
      return d;
    }
  }
  // 5. keep.
  d.limited = !device_sm;
  d.why = device_sm ? "uses what it holds (SM active p95 " + pct_text(*e.sm_active_p95) + ", busy " +
                          pct_text(e.busy_share) + ")"
                    : "no device counters in its windows: SM active is not known, so no smaller allocation is advised";
  return d;
}


}  // namespace gpuledger::report
