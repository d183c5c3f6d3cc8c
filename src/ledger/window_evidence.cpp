#include "ledger/window_evidence.h"

#include <algorithm>
#include <cmath>

namespace gpuledger::ledger {

std::optional<uint64_t> vram_peak(const AccountRecord& a) { return a.evidence.vram_peak_bytes; }
std::optional<uint64_t> vram_p95(const AccountRecord& a) {
  return a.evidence.vram_p95_bytes ? a.evidence.vram_p95_bytes : a.evidence.vram_peak_bytes;
}
std::optional<uint64_t> nvml_vram_peak(const AccountRecord& a) { return a.evidence.nvml_vram_peak_bytes; }
std::optional<uint64_t> nvml_vram_p95(const AccountRecord& a) {
  return a.evidence.nvml_vram_p95_bytes ? a.evidence.nvml_vram_p95_bytes : a.evidence.nvml_vram_peak_bytes;
}
std::optional<double> sm_active_p95(const AccountRecord& a) {
  return a.evidence.sm_active_p95 ? a.evidence.sm_active_p95 : a.efficiency.sm_active;
}
std::optional<double> sm_occupancy_p95(const AccountRecord& a) {
  return a.evidence.sm_occupancy_p95 ? a.evidence.sm_occupancy_p95 : a.efficiency.sm_occupancy;
}
double busy_p95(const AccountRecord& a, double seconds) {
  if (a.evidence.busy_p95) return *a.evidence.busy_p95;
  return seconds > 0 ? std::clamp(a.busy_seconds / seconds, 0.0, 1.0) : 0.0;
}
IdleRun idle_run(const AccountRecord& a, double seconds) {
  if (a.evidence.idle) return *a.evidence.idle;
  if (a.held_share > 0 && a.launches == 0) return {seconds, seconds, seconds};
  return {};
}
int64_t window_count(const AccountRecord& a) { return a.evidence.windows.value_or(1); }

namespace {
// A run fills its span (to rounding: lengths are whole seconds).
bool fills(const IdleRun& r, double seconds) { return seconds > 0 && r.lead + 1e-6 >= seconds; }
}  // namespace

IdleRun join_idle(const IdleRun& x, double x_seconds, const IdleRun& y, double y_seconds) {
  IdleRun j;
  j.lead = fills(x, x_seconds) ? x_seconds + y.lead : x.lead;
  j.trail = fills(y, y_seconds) ? y_seconds + x.trail : y.trail;
  j.longest = std::max({x.longest, y.longest, x.trail + y.lead, j.lead, j.trail});
  return j;
}

std::optional<double> weighted_p95(std::vector<std::pair<double, int64_t>> values) {
  std::erase_if(values, [](const auto& v) { return v.second <= 0 || !std::isfinite(v.first); });
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  int64_t total = 0;
  for (const auto& [v, w] : values) total += w;
  // Nearest rank: ceil(0.95 x total), in integers (no rounding surprise at exact ranks).
  const int64_t rank = (95 * total + 99) / 100;
  int64_t seen = 0;
  for (const auto& [v, w] : values) {
    seen += w;
    if (seen >= rank) return v;
  }
  return values.back().first;
}

namespace {
std::optional<uint64_t> max_of(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}
std::optional<uint64_t> as_bytes(std::optional<double> v) {
  return v ? std::optional<uint64_t>(static_cast<uint64_t>(std::llround(*v))) : std::nullopt;
}
}  // namespace

AccountEvidence merge_evidence(const std::vector<EvidenceSpan>& spans) {
  AccountEvidence m;
  std::vector<std::pair<double, int64_t>> vram, nvml, sm, occupancy, busy;
  IdleRun run;
  double covered = 0;  // seconds joined so far
  int64_t last_end = 0, windows = 0;
  bool first = true;
  for (const auto& s : spans) {
    const double len = static_cast<double>(s.end - s.start);
    if (!first && s.start > last_end) {  // a gap: no window, nothing held
      const double gap = static_cast<double>(s.start - last_end);
      run = join_idle(run, covered, IdleRun{}, gap);
      covered += gap;
    }
    const IdleRun here = s.record ? idle_run(*s.record, len) : IdleRun{};
    run = first ? here : join_idle(run, covered, here, len);
    covered += len;
    first = false;
    last_end = std::max(last_end, s.end);
    if (!s.record) continue;
    const AccountRecord& a = *s.record;
    const int64_t n = window_count(a);
    windows += n;
    m.vram_peak_bytes = max_of(m.vram_peak_bytes, vram_peak(a));
    m.nvml_vram_peak_bytes = max_of(m.nvml_vram_peak_bytes, nvml_vram_peak(a));
    if (auto v = vram_p95(a)) vram.emplace_back(static_cast<double>(*v), n);
    if (auto v = nvml_vram_p95(a)) nvml.emplace_back(static_cast<double>(*v), n);
    if (auto v = sm_active_p95(a)) sm.emplace_back(*v, n);
    if (auto v = sm_occupancy_p95(a)) occupancy.emplace_back(*v, n);
    busy.emplace_back(busy_p95(a, len), n);
  }
  m.vram_p95_bytes = as_bytes(weighted_p95(vram));
  m.nvml_vram_p95_bytes = as_bytes(weighted_p95(nvml));
  m.sm_active_p95 = weighted_p95(sm);
  m.sm_occupancy_p95 = weighted_p95(occupancy);
  m.busy_p95 = weighted_p95(busy);
  m.idle = run;
  m.windows = windows;
  return m;
}

}  // namespace gpuledger::ledger
