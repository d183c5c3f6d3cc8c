// One unit's recommendation from its evidence and what it paid and held
// (rightsizing_decision.h; the order and rules: rightsizing.h, docs/rightsizing.md).
#include "report/rightsizing_decision.h"

#include <algorithm>
#include <cmath>

#include "ledger/allocation_use.h"
#include "ledger/device_quality.h"
#include "ledger/mig_profiles.h"
#include "report/report_text.h"

namespace gpuledger::report {

int64_t mul_div_half_up(int64_t a, int64_t b, int64_t c) {
  if (c <= 0) return 0;
  const __int128 n = static_cast<__int128>(a) * b;
  return static_cast<int64_t>((n + c / 2) / c);
}

int64_t confidence_hundredths(int64_t evidence_seconds, int64_t steadiness_thousandths) {
  constexpr int64_t kDay = 86400;
  const int64_t s = std::max<int64_t>(0, evidence_seconds);
  const int64_t steady = std::clamp<int64_t>(steadiness_thousandths, 0, 1000);
  // w(d) as num / den: 3 s / (10 D) below a day, (11 D + 7 s) / (60 D) up to a week, 1 after.
  int64_t num = 1, den = 1;
  if (s < kDay) num = 3 * s, den = 10 * kDay;
  else if (s < 7 * kDay) num = 11 * kDay + 7 * s, den = 60 * kDay;
  return mul_div_half_up(num * steady, 100, den * 1000);
}

bool memory_bound(const RightsizingEvidence& e) {
  if (e.sm_source != "device" || !e.dram_active_p95 || !e.sm_active_p95) return false;
  const double dram = *e.dram_active_p95;
  return dram >= kMemoryBoundDram - 1e-9 && dram > *e.sm_active_p95 && dram > e.tensor_active_p95.value_or(0);
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

// 3. mig: the smallest profile that fits, smaller than what it holds. A
// memory-bound unit on a whole GPU is sized by its memory too: a profile
// carries the share of the memory bandwidth its memory is of the GPU's.
Decision decide_mig(const UnitFacts& f, const RightsizingEvidence& e, const RightsizingOptions& o,
                    const ledger::MigTable& table) {
  Decision d;
  const bool device_sm = e.sm_source == "device";
  const int held_slices = f.held_slices;
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
  uint64_t gpu_memory = 0;  // the whole GPU's: its largest profile's
  for (const auto& p : table.profiles) gpu_memory = std::max(gpu_memory, p.memory_bytes);
  const bool by_memory = memory_bound(e) && held_slices == table.slices && gpu_memory > 0;
  const std::string memory_words =
      by_memory ? "memory-bound (DRAM active p95 " + pct_text(*e.dram_active_p95) + ", above its SM active and tensor): "
                                                                                     "sized by its memory; "
                : "";
  for (const auto& p : table.profiles) {
    if (p.compute_slices >= held_slices) break;
    if (!fits(*e.vram_peak_bytes, o.vram_headroom_micros, p.memory_bytes)) continue;
    // SM active is of what it holds (the whole GPU's, or a MIG instance's
    // own): n of the GPU's slices cover it when SM active x held slices <= n.
    if (*e.sm_active_p95 * held_slices > p.compute_slices + 1e-9) continue;
    // DRAM active of the whole GPU: the profile's memory / the GPU's covers it.
    if (by_memory && *e.dram_active_p95 * static_cast<double>(gpu_memory) > static_cast<double>(p.memory_bytes) + 1.0)
      continue;
    // Its windows cost the price of its held slices; the profile's n of them cost n / held of that.
    const int64_t saving = f.paid - mul_div_half_up(f.held_window_cost, p.compute_slices, held_slices);
    if (saving <= 0) break;  // it pays less than the slice would cost: not a saving
    d.advice = Advice::kMig;
    d.target = p.name;
    d.saving = saving;
    d.limited = !device_sm;
    d.why = memory_words + "VRAM peak " + gib(*e.vram_peak_bytes) + " with " + fixed(o.vram_headroom_micros / 1e4, 0) +
            "% headroom fits " + p.name + " (" + gib(p.memory_bytes) + "), and SM active p95 " +
            pct_text(*e.sm_active_p95) + " fits its " + std::to_string(p.compute_slices) + "/" +
            std::to_string(table.slices) + " of the compute" +
            (by_memory ? " and its " + gib(p.memory_bytes) + " of " + gib(gpu_memory) + " of the memory bandwidth" : "") +
            (device_sm ? "" : "; SM active is the eBPF span estimate (no device counters in its windows), so no "
                              "saving is stated");
    return d;
  }
  d.limited = !device_sm;
  d.why = memory_words + "needs VRAM " + gib(*e.vram_peak_bytes) + " +" + fixed(o.vram_headroom_micros / 1e4, 0) +
          "% and SM active p95 " + pct_text(*e.sm_active_p95) +
          (by_memory ? " and DRAM active p95 " + pct_text(*e.dram_active_p95) : "") + ": no smaller " + table.model +
          " MIG profile fits" +
          (device_sm ? "" : " (SM active is the eBPF span estimate: no device counters in its windows)");
  return d;
}

Decision decide_advice(const UnitFacts& f, const RightsizingEvidence& e, const RightsizingOptions& o) {
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
  if (table && f.held_slices > 0) return decide_mig(f, e, o, *table);
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

}  // namespace

Decision decide(const UnitFacts& f, const RightsizingEvidence& e, const RightsizingOptions& o) {
  Decision d = decide_advice(f, e, o);
  if (e.device_suspect_windows > 0)
    d.why += "; device data suspect in " + std::to_string(e.device_suspect_windows) + " of its windows (" +
             ledger::describe_findings(e.device_findings) + "): their suspect values are not used";
  if (std::llround(e.evidence_seconds) < o.min_evidence_seconds) {
    d.limited = true;
    d.why += "; only " + duration_words(e.evidence_seconds) + " of held time behind it, below min_evidence " +
             duration_words(static_cast<double>(o.min_evidence_seconds)) + ": no saving is stated";
  }
  return d;
}

}  // namespace gpuledger::report
