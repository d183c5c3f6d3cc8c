#include "ledger/device_quality.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gpuledger::ledger {

namespace {

constexpr double kSameValue = 1e-9;

constexpr size_t idx(CheckedField f) { return static_cast<size_t>(f); }

bool is_dcgm(CheckedField f) { return f != CheckedField::kNvmlUtilization; }

template <typename R>
void widen(R& r, const CheckSample& s) {
  for (size_t i = 0; i < kCheckedFieldCount; ++i) {
    if (!s.values[i]) continue;
    const double v = *s.values[i];
    if (!r.seen[i]) {
      r.lo[i] = r.hi[i] = v;
      r.seen[i] = true;
    } else {
      r.lo[i] = std::min(r.lo[i], v);
      r.hi[i] = std::max(r.hi[i], v);
    }
  }
}

template <typename R>
bool moved(const R& r, size_t i, double range) {
  return r.seen[i] && r.hi[i] - r.lo[i] >= range - 1e-12;
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= kSameValue)) return false;
  return true;
}

}  // namespace

std::string_view field_name(CheckedField f) {
  switch (f) {
    case CheckedField::kGrEngineActive: return "gr_engine_active";
    case CheckedField::kSmActive: return "sm_active";
    case CheckedField::kSmOccupancy: return "sm_occupancy";
    case CheckedField::kTensorActive: return "tensor_active";
    case CheckedField::kDramActive: return "dram_active";
    case CheckedField::kDcgmUtilization: return "dcgm_utilization";
    case CheckedField::kNvmlUtilization: return "nvml_utilization";
    case CheckedField::kCount: break;
  }
  return "";
}

std::string_view to_string(DeviceQuality q) {
  switch (q) {
    case DeviceQuality::kOk: return "ok";
    case DeviceQuality::kSuspect: return "suspect";
    case DeviceQuality::kAbsent: return "absent";
  }
  return "";
}

bool CheckSample::empty() const {
  return dcgm_all.empty() && nvml_all.empty() &&
         std::none_of(values.begin(), values.end(), [](const auto& v) { return v.has_value(); });
}

bool DeviceVerdict::suspect(CheckedField f) const {
  const std::string_view name = field_name(f);
  const std::string_view source = is_dcgm(f) ? "dcgm" : "nvml";
  return std::any_of(findings.begin(), findings.end(), [&](const DeviceFinding& d) {
    return d.field == name || (d.field == source && d.reason == kStopped);
  });
}

void DeviceCrossCheck::observe(const std::string& uuid, double t0, double t1, const CheckSample& s) {
  if (s.empty()) return;
  Gpu& g = gpus_[uuid];
  const double dt = std::max(0.0, t1 - t0);
  g.sampled = true;
  for (size_t i = 0; i < kCheckedFieldCount; ++i) {
    Run& r = g.runs[i];
    if (!s.values[i]) {
      r = Run{};
      continue;
    }
    const double v = *s.values[i];
    g.weighted[i] += v * dt;
    g.seconds[i] += dt;
    g.max[i] = g.any[i] ? std::max(g.max[i], v) : v;
    g.any[i] = true;
    if (r.value && std::fabs(*r.value - v) <= kSameValue) {
      r.last = t1;
    } else {
      r = Run{};
      r.value = v;
      r.since = r.last = t1;
    }
    widen(r, s);
  }
  auto source = [&](SourceRun& r, const std::vector<double>& values) {
    if (values.empty()) {
      r = SourceRun{};
      return;
    }
    if (r.live && same_values(r.values, values)) {
      r.last = t1;
    } else {
      r = SourceRun{};
      r.values = values;
      r.live = true;
      r.since = r.last = t1;
    }
    widen(r, s);
  };
  source(g.dcgm, s.dcgm_all);
  source(g.nvml, s.nvml_all);
}

DeviceVerdict DeviceCrossCheck::close(const std::string& uuid, const WindowWitness& w) {
  DeviceVerdict v;
  auto it = gpus_.find(uuid);
  if (it == gpus_.end() || !it->second.sampled) return v;  // absent
  Gpu& g = it->second;
  const DeviceCheckConfig& c = config_;
  std::array<std::optional<double>, kCheckedFieldCount> mean{};
  for (size_t i = 0; i < kCheckedFieldCount; ++i)
    if (g.any[i]) mean[i] = g.seconds[i] > 0 ? g.weighted[i] / g.seconds[i] : g.max[i];
  auto zero = [&](CheckedField f) { return g.any[idx(f)] && g.max[idx(f)] <= c.zero_epsilon; };
  // Utilisation says busy: DCGM's or NVML's mean, the larger, leaving out `self`.
  auto util_busy = [&](CheckedField self) {
    for (CheckedField f : {CheckedField::kDcgmUtilization, CheckedField::kNvmlUtilization})
      if (f != self && mean[idx(f)] && *mean[idx(f)] >= c.busy_utilization) return true;
    return false;
  };
  // The probes' spans (or NVML's per-process samples) say busy.
  bool witness_busy = false;
  if (w.window_seconds > 0) {
    const double spans = w.span_busy_seconds.value_or(0) / w.window_seconds;
    const double sampled = w.nvml_sm_seconds / w.window_seconds;
    witness_busy = std::max(spans, sampled) >= c.busy_spans;
  }
  std::vector<DeviceFinding> found;
  auto add = [&](std::string_view field, std::string_view reason) {
    found.push_back({std::string(field), std::string(reason)});
  };
  bool primary = false;
  if (witness_busy) {
    for (CheckedField f : {CheckedField::kGrEngineActive, CheckedField::kSmActive})
      if (zero(f) && util_busy(f)) {
        add(field_name(f), kZeroWhileBusy);
        primary = true;
      }
    if (primary)
      for (CheckedField f : {CheckedField::kSmOccupancy, CheckedField::kTensorActive, CheckedField::kDramActive})
        if (zero(f)) add(field_name(f), kZeroWhileBusy);
    for (CheckedField f : {CheckedField::kDcgmUtilization, CheckedField::kNvmlUtilization})
      if (zero(f) && util_busy(f)) add(field_name(f), kZeroWhileBusy);
  }
  for (size_t i = 0; i < kCheckedFieldCount; ++i) {
    const Run& r = g.runs[i];
    if (!r.value || r.last - r.since < c.frozen_seconds) continue;
    if (*r.value <= c.zero_epsilon || *r.value >= 1 - c.zero_epsilon) continue;  // idle or saturated: may stand still
    bool others = false;
    for (size_t o = 0; o < kCheckedFieldCount; ++o) others = others || (o != i && moved(r, o, c.moving_range));
    if (others) add(field_name(static_cast<CheckedField>(i)), kFrozen);
  }
  auto stopped = [&](const SourceRun& r, bool dcgm) {
    if (!r.live || r.last - r.since < c.stopped_seconds) return false;
    for (size_t o = 0; o < kCheckedFieldCount; ++o)
      if (is_dcgm(static_cast<CheckedField>(o)) != dcgm && moved(r, o, c.moving_range)) return true;
    return false;
  };
  if (stopped(g.dcgm, true)) add("dcgm", kStopped);
  if (stopped(g.nvml, false)) add("nvml", kStopped);
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  v.findings = std::move(found);
  v.quality = v.findings.empty() ? DeviceQuality::kOk : DeviceQuality::kSuspect;
  g.weighted = {};
  g.seconds = {};
  g.max = {};
  g.any = {};
  g.sampled = false;
  return v;
}

std::string encode_findings(const std::map<std::string, int64_t>& findings) {
  std::string out;
  for (const auto& [key, n] : findings) {
    if (n <= 0) continue;
    if (!out.empty()) out += ',';
    out += key + "=" + std::to_string(n);
  }
  return out;
}

std::map<std::string, int64_t> decode_findings(std::string_view text) {
  std::map<std::string, int64_t> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t eq = item.rfind('=');
    int64_t n = 1;
    if (eq != std::string_view::npos) {
      std::from_chars(item.data() + eq + 1, item.data() + item.size(), n);
      item = item.substr(0, eq);
    }
    if (!item.empty() && n > 0) out[std::string(item)] += n;
  }
  return out;
}

std::map<std::string, int64_t> finding_counts(const DeviceVerdict& v) {
  std::map<std::string, int64_t> out;
  for (const auto& f : v.findings) out[f.field + ":" + f.reason] = 1;
  return out;
}

std::string describe_findings(const std::map<std::string, int64_t>& findings) {
  std::string out;
  for (const auto& [key, n] : findings) {
    if (!out.empty()) out += ", ";
    const size_t colon = key.find(':');
    out += colon == std::string::npos ? key : key.substr(0, colon) + ": " + key.substr(colon + 1);
  }
  return out;
}

}  // namespace gpuledger::ledger

#include "ledger/store.h"

namespace gpuledger::ledger {

DeviceQualitySummary device_quality_summary(const Store& store, int64_t from, int64_t to) {
  DeviceQualitySummary s;
  store.for_each_window(from, to, [&](WindowRecord&& w) {
    if (w.device_quality.judged() == 0) return;
    s.windows += w.device_quality.judged();
    s.ok += w.device_quality.ok;
    s.suspect += w.device_quality.suspect;
    s.absent += w.device_quality.absent;
    if (w.device_quality.suspect > 0)
      for (const auto& [key, n] : w.device_findings) s.findings_by_gpu[w.slot.uuid][key] += n;
  });
  return s;
}

std::string DeviceQualitySummary::line() const {
  if (windows == 0) return "no window with judged device data in the store's last day";
  std::string out = std::to_string(suspect) + " of " + std::to_string(windows) + " windows in the last day had suspect "
                    "device data (" + std::to_string(ok) + " ok, " + std::to_string(absent) + " absent)";
  for (const auto& [uuid, findings] : findings_by_gpu) out += "; " + uuid + ": " + describe_findings(findings);
  if (suspect > 0)
    out += " - check the DCGM watches (restarting dcgm-exporter clears a dead profiling watch); suspect values are not billed";
  return out;
}

}  // namespace gpuledger::ledger
