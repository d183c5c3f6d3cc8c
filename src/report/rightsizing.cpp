// Rightsizing: evidence per unit (rightsizing.h), then one decision each
// (rightsizing_decision.h), gathered into rows.
#include "report/rightsizing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "common/recent_map.h"
#include "ledger/allocation_use.h"
#include "ledger/share_seconds.h"
#include "ledger/window_evidence.h"
#include "report/probe_set_note.h"
#include "report/report.h"
#include "report/report_text.h"
#include "report/rightsizing_decision.h"
#include "report/special_accounts.h"

namespace gpuledger::report {

using ledger::AccountRecord;
using ledger::WindowRecord;

std::string_view to_string(Advice a) {
  switch (a) {
    case Advice::kRelease: return "release";
    case Advice::kMig: return "mig";
    case Advice::kTimeSlice: return "time-slice";
    case Advice::kMore: return "more";
    case Advice::kKeep: return "keep";
  }
  return "keep";
}

GroupBy parse_rightsizing_by(const std::string& text) {
  if (text == "pod") return GroupBy::kPod;
  if (text == "workload") return GroupBy::kWorkload;
  if (text == "namespace") return GroupBy::kNamespace;
  if (text == "team") return GroupBy::kTeam;
  if (text == "user") return GroupBy::kUser;
  if (text == "account") return GroupBy::kAccount;
  throw Error("--by: unknown grouping '" + text + "' (pod, workload, namespace, team, user or account)");
}

namespace {

// No advice for gpuledger's own accounts (special_accounts.h), __overflow__ included.

struct Segment {
  int64_t start = 0, end = 0;
  ledger::IdleRun run;
};

// Appends a window's run to a slot's segments, joined to the last one when it
// follows it (the store streams a slot's windows mostly in time order): a
// unit's memory grows with the breaks in that order, not with its windows.
void append(std::vector<Segment>& segs, const Segment& g) {
  if (!segs.empty() && segs.back().end == g.start) {
    Segment& last = segs.back();
    last.run = ledger::join_idle(last.run, static_cast<double>(last.end - last.start), g.run,
                                 static_cast<double>(g.end - g.start));
    last.end = g.end;
    return;
  }
  segs.push_back(g);
}

// Window values for a p95, counted: ratios (0..1) in 1,001 steps of 0.001,
// each rounded up (a fit is never claimed on a figure rounded down); VRAM by
// the MB, rounded up. Memory per unit is fixed (ratios) or bounded by its
// distinct MBs, not by its windows, and adding a window is cheap.
class RatioHistogram {
 public:
  static constexpr int kSteps = 1000;
  void add(double ratio, int64_t weight) {
    if (counts_.empty()) counts_.assign(kSteps + 1, 0);
    const double r = std::clamp(ratio, 0.0, 1.0);
    counts_[static_cast<size_t>(std::ceil(r * kSteps - 1e-9))] += weight;
    total_ += weight;
  }
  std::optional<double> p95() const {
    const auto i = step(95);
    return i ? std::optional<double>(static_cast<double>(*i) / kSteps) : std::nullopt;
  }
  // The nearest-rank percentile `pct`, in steps of 0.001 (as ledger::weighted_p95).
  std::optional<int64_t> step(int64_t pct) const {
    if (total_ <= 0) return std::nullopt;
    const int64_t rank = (pct * total_ + 99) / 100;
    int64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i)
      if ((seen += counts_[i]) >= rank) return static_cast<int64_t>(i);
    return kSteps;
  }
  // 1000 - (p95 - p50) in thousandths: how steady the values were; nullopt without any.
  std::optional<int64_t> steadiness() const {
    const auto hi = step(95), mid = step(50);
    if (!hi || !mid) return std::nullopt;
    return kSteps - (*hi - *mid);
  }

 private:
  std::vector<int64_t> counts_;  // allocated at the first value
  int64_t total_ = 0;
};

class BytesHistogram {
 public:
  void add(uint64_t bytes, int64_t weight) { counts_[(bytes + 999'999) / 1'000'000] += weight; }
  std::optional<uint64_t> p95() const {
    std::vector<std::pair<double, int64_t>> values;
    values.reserve(counts_.size());
    for (const auto& [mb, n] : counts_) values.emplace_back(static_cast<double>(mb), n);
    const auto p = ledger::weighted_p95(std::move(values));
    return p ? std::optional<uint64_t>(static_cast<uint64_t>(*p) * 1'000'000) : std::nullopt;
  }

 private:
  std::map<uint64_t, int64_t> counts_;
};

// What one unit did on one slot.
struct SlotTrace {
  std::vector<Segment> segments;                // idle runs, joined in time order at the end
  std::pair<int64_t, std::string> last_window;  // (start, account) counted
};

// Everything one unit (a pod or a workload) did in the range.
struct Unit {
  std::string group;                        // its row's key (the unit itself, or its namespace / team)
  RecentMap<std::string, SlotTrace> slots;  // by slot; a window's slot is most often the last one's
  std::optional<uint64_t> vram_peak, nvml_peak;
  BytesHistogram vram, nvml;
  RatioHistogram sm, occupancy, busy, dram, tensor;
  UnitFacts facts;  // what the decision needs beyond the evidence
  double evidence_held = 0, evidence_present = 0;  // seconds, in the windows the agent watched
  double busy_seconds = 0;
  int64_t windows = 0;
  uint64_t launches = 0;
  std::set<std::string> models;
  std::set<int> held_slices;  // compute slices of what it holds: a whole GPU's table slices, a MIG profile's n
  int64_t device_suspect_windows = 0;
  std::map<std::string, int64_t> device_findings;
};

template <typename T>
std::optional<T> max_opt(std::optional<T> a, std::optional<T> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

}  // namespace

struct RightsizingBuilder::State {
  int64_t from, to;
  GroupBy by;
  RightsizingOptions options;
  std::map<std::string, Unit> units;
  std::set<std::string> currencies;
  std::optional<int64_t> first_start, last_end;
  std::map<std::string, int, std::less<>> slices_by_model;  // the model's MIG table's slices; 0: none

  // Looked up once per model (a table match lower-cases and scans), not per window.
  int mig_slices(const std::string& model) {
    auto it = slices_by_model.find(model);
    if (it == slices_by_model.end()) {
      const auto table = options.mig.for_model(model);
      it = slices_by_model.emplace(model, table ? table->slices : 0).first;
    }
    return it->second;
  }

  // An account's unit, found once (std::map nodes do not move) and again only
  // when its labels change, as the report's groups are.
  struct AccountUnit {
    ledger::AccountLabels labels;
    Unit* unit = nullptr;
  };
  std::unordered_map<std::string, AccountUnit> account_units;
  Unit& unit_of(const WindowRecord& w, const AccountRecord& a) {
    auto [it, fresh] = account_units.try_emplace(a.account);
    if (fresh || !(it->second.labels == a.labels)) {
      const GroupBy unit_by = by == GroupBy::kWorkload ? GroupBy::kWorkload : GroupBy::kPod;
      it->second = {a.labels, &units[group_key(unit_by, w, a)]};
      it->second.unit->group = group_key(by, w, a);  // the latest labels win, as in the report
    }
    return *it->second.unit;
  }
};

RightsizingBuilder::RightsizingBuilder(int64_t from, int64_t to, GroupBy by, RightsizingOptions options)
    : s_(std::make_unique<State>()) {
  s_->from = from;
  s_->to = to;
  s_->by = by;
  s_->options = std::move(options);
}
RightsizingBuilder::~RightsizingBuilder() = default;

namespace {

// One unit's part of one window: its accounts there (a pod's containers)
// together. They are idle together only; their VRAM and their shares of the
// GPU add up (for a rolled-up hour, the sum of p95s: an upper bound).
struct WindowPart {
  ledger::IdleRun run;
  bool first = true;
  int64_t paid = 0;
  std::optional<uint64_t> vram_peak, vram_p95, nvml_peak, nvml_p95;
  std::optional<double> sm, occupancy, dram, tensor;
  double busy = 0, held = 0;
  int64_t windows = 1;

  void add(const AccountRecord& a, double len, bool watched, int64_t charged) {
    const ledger::IdleRun r = watched ? ledger::idle_run(a, len) : ledger::IdleRun{};
    run = first ? r : ledger::IdleRun{std::min(run.lead, r.lead), std::min(run.trail, r.trail),
                                      std::min(run.longest, r.longest)};
    windows = first ? ledger::window_count(a) : std::max(windows, ledger::window_count(a));
    first = false;
    paid += charged;
    vram_peak = sum(vram_peak, ledger::vram_peak(a));
    vram_p95 = sum(vram_p95, ledger::vram_p95(a));
    nvml_peak = sum(nvml_peak, ledger::nvml_vram_peak(a));
    nvml_p95 = sum(nvml_p95, ledger::nvml_vram_p95(a));
    sm = sum(sm, ledger::sm_active_p95(a));
    occupancy = sum(occupancy, ledger::sm_occupancy_p95(a));
    dram = sum(dram, a.efficiency.dram_active);  // a roll-up's: its hour's average
    tensor = sum(tensor, a.efficiency.tensor_active);
    held += a.held_share * len;
    busy = std::min(1.0, busy + ledger::busy_p95(a, len));
  }
  template <typename T>
  static std::optional<T> sum(std::optional<T> x, std::optional<T> y) {
    if (!x) return y;
    if (!y) return x;
    return *x + *y;
  }
};

}  // namespace

void RightsizingBuilder::add(const WindowRecord& w) { add(w, ledger::share_seconds(w)); }

void RightsizingBuilder::add(const WindowRecord& w, const ledger::WindowShares& shares) {
  State& s = *s_;
  s.currencies.insert(w.currency);
  s.first_start = std::min(s.first_start.value_or(w.start), w.start);
  s.last_end = std::max(s.last_end.value_or(w.end), w.end);
  const double len = static_cast<double>(w.end - w.start);
  // The agent did not watch backfill and gap windows: no evidence of idleness or use.
  const bool watched = w.source != "backfill" && w.source != "gap";
  const int table_slices = s.mig_slices(w.slot.model);
  std::map<Unit*, WindowPart> parts;  // each unit's part of this window
  for (const auto& a : w.accounts) {
    if (is_special_account(a.account)) continue;
    Unit& u = s.unit_of(w, a);
    auto [part, first_in_window] = parts.try_emplace(&u);
    int64_t charged = 0;  // a window has a handful of charges: searched in place
    for (const auto& c : w.charges)
      if (c.account == a.account) charged += c.micros;
    part->second.add(a, len, watched, charged);
    u.facts.paid += charged;
    u.models.insert(w.slot.model);
    u.launches += a.launches;
    u.busy_seconds += a.gpu_busy_seconds;
    u.facts.held_seconds += a.held_share * len;
    if (first_in_window) u.facts.present_seconds += len;
    if (w.busy_source == "device") u.facts.device_busy = true;
    if (const ledger::ShareSeconds* found = shares.find(a.account)) {
      // A unit's window counts once however many of its accounts were on the
      // slot (as the report's allocated against used); their shares add up.
      ledger::ShareSeconds share = *found;
      if (!first_in_window) share.share = 0, share.energy_share = 0;
      u.facts.shares += share;
    }
    if (a.held_share > 0) {
      // A unit's several accounts on one slot in one window pay for its window once.
      auto& last = u.slots[w.slot.uuid].last_window;
      if (last.first != w.start || last.second.empty()) {
        last = {w.start, a.account};
        u.facts.held_window_cost += w.cost_micros;
      }
      if (w.slot.mig_profile) {
        if (auto n = ledger::mig_profile_slices(*w.slot.mig_profile)) u.held_slices.insert(*n);
        u.facts.mig_slot = true;
      } else {
        u.held_slices.insert(table_slices);
      }
    }
  }
  for (const auto& [unit, part] : parts) {
    Unit& u = *unit;
    append(u.slots[w.slot.uuid].segments, {w.start, w.end, part.run});
    if (!watched) continue;
    if (w.device_quality.suspect > 0) {
      u.device_suspect_windows += w.device_quality.suspect;
      for (const auto& [key, n] : w.device_findings) u.device_findings[key] += n;
    }
    if (len > 0 && part.run.longest + 1e-6 >= len) u.facts.idle_paid += part.paid;
    const int64_t n = part.windows;
    u.windows += n;
    u.evidence_held += part.held;
    u.evidence_present += w.end - w.start;
    u.vram_peak = max_opt(u.vram_peak, part.vram_peak);
    u.nvml_peak = max_opt(u.nvml_peak, part.nvml_peak);
    if (part.vram_p95) u.vram.add(*part.vram_p95, n);
    if (part.nvml_p95) u.nvml.add(*part.nvml_p95, n);
    if (part.sm) u.sm.add(*part.sm, n);
    if (part.occupancy) u.occupancy.add(*part.occupancy, n);
    if (part.dram) u.dram.add(*part.dram, n);
    if (part.tensor) u.tensor.add(*part.tensor, n);
    u.busy.add(part.busy, n);
  }
}

namespace {

// The longest idle run per slot, its segments joined in time order (a
// segment out of order, or after a window the unit was absent from, starts
// a new one; nothing held in between breaks a run).
double longest_idle(const RecentMap<std::string, SlotTrace>& slots) {
  double longest = 0;
  for (const auto& [slot, trace] : slots.all()) {
    std::vector<Segment> segs = trace.segments;
    std::sort(segs.begin(), segs.end(), [](const Segment& x, const Segment& y) { return x.start < y.start; });
    ledger::IdleRun run;
    double covered = 0;
    int64_t end = 0;
    for (size_t i = 0; i < segs.size(); ++i) {
      const Segment& g = segs[i];
      if (i > 0 && g.start < end) continue;  // overlaps what is joined (never written so): counted once
      const double len = static_cast<double>(g.end - g.start);
      if (i > 0 && g.start > end) {  // no window: nothing held
        run = ledger::join_idle(run, covered, {}, static_cast<double>(g.start - end));
        covered += static_cast<double>(g.start - end);
      }
      run = i == 0 ? g.run : ledger::join_idle(run, covered, g.run, len);
      covered += len;
      end = g.end;
    }
    longest = std::max(longest, run.longest);
  }
  return longest;
}

RightsizingEvidence evidence_of(const Unit& u) {
  RightsizingEvidence e;
  e.vram_peak_bytes = max_opt(u.vram_peak, u.nvml_peak);
  e.vram_p95_bytes = max_opt(u.vram.p95(), u.nvml.p95());
  e.sm_active_p95 = u.sm.p95();
  e.sm_occupancy_p95 = u.occupancy.p95();
  e.dram_active_p95 = u.dram.p95();
  e.tensor_active_p95 = u.tensor.p95();
  const RatioHistogram* sizing = &u.sm;  // the figure that sizes it, for its steadiness
  if (e.sm_active_p95) {
    e.sm_source = "device";
  } else if (auto busy = u.busy.p95()) {
    e.sm_active_p95 = busy;  // the eBPF span estimate stands in, labelled
    e.sm_source = "ebpf";
    sizing = &u.busy;
  }
  if (memory_bound(e)) sizing = &u.dram;
  e.steadiness_thousandths = sizing->steadiness().value_or(1000);
  e.evidence_seconds = u.evidence_held > 0 ? u.evidence_held : u.evidence_present;
  const double held = u.facts.held_seconds > 0 ? u.facts.held_seconds : u.facts.present_seconds;
  e.busy_share = held > 0 ? std::min(1.0, u.busy_seconds / held) : 0;
  e.idle_seconds_longest = longest_idle(u.slots);
  e.windows = u.windows;
  e.launches = u.launches;
  if (u.vram_peak) e.sources.push_back("probes");
  if (u.nvml_peak) e.sources.push_back("nvml");
  if (!e.sm_source.empty()) e.sources.push_back(e.sm_source);
  e.models.assign(u.models.begin(), u.models.end());
  e.device_suspect_windows = u.device_suspect_windows;
  e.device_findings = u.device_findings;
  return e;
}

}  // namespace

Rightsizing RightsizingBuilder::finish() const {
  const State& s = *s_;
  Rightsizing r;
  r.from = s.from;
  r.to = s.to;
  r.by = to_string(s.by);
  r.options = s.options;
  if (s.currencies.size() > 1) throw Error("the range mixes currencies; rightsize a range with one currency");
  if (!s.currencies.empty()) r.currency = *s.currencies.begin();
  if (s.first_start)
    r.period_seconds = std::max<int64_t>(0, std::min(s.to, *s.last_end) - std::max(s.from, *s.first_start));
  auto per_month = [&](int64_t saving) { return mul_div_half_up(std::max<int64_t>(0, saving), kMonthSeconds, r.period_seconds); };
  // Per unit; then, by namespace or team, per (group, advice, target, limited).
  std::map<std::tuple<std::string, Advice, std::string, bool>, Recommendation> rows;
  for (const auto& [key, u] : s.units) {
    const RightsizingEvidence e = evidence_of(u);
    UnitFacts facts = u.facts;
    facts.held_slices = u.held_slices.empty() ? 0 : *u.held_slices.rbegin();
    const Decision d = decide(facts, e, s.options);
    const bool grouped = s.by == GroupBy::kNamespace || s.by == GroupBy::kTeam || s.by == GroupBy::kUser ||
                         s.by == GroupBy::kAccount;
    const std::string row_key = grouped ? u.group : key;
    auto [it, fresh] = rows.try_emplace({row_key, d.advice, d.target, d.limited});
    Recommendation& rec = it->second;
    rec.members.push_back(key);
    rec.cost_micros += u.facts.paid;
    const int64_t saving = d.limited ? 0 : per_month(d.saving);
    const int64_t confidence =
        confidence_hundredths(std::llround(e.evidence_seconds), e.steadiness_thousandths);
    if (fresh) {
      rec.confidence_hundredths = confidence;
      rec.key = row_key;
      rec.advice = d.advice;
      rec.target = d.target;
      rec.limited = d.limited;
      rec.why = d.why;
      rec.evidence = e;
      if (!d.limited) rec.saving_per_month_micros = saving;
      continue;
    }
    // A group of pods: the largest figures, windows summed, sources and models united.
    if (!d.limited) rec.saving_per_month_micros = rec.saving_per_month_micros.value_or(0) + saving;
    rec.confidence_hundredths = std::min(rec.confidence_hundredths, confidence);
    RightsizingEvidence& g = rec.evidence;
    g.vram_peak_bytes = max_opt(g.vram_peak_bytes, e.vram_peak_bytes);
    g.vram_p95_bytes = max_opt(g.vram_p95_bytes, e.vram_p95_bytes);
    g.sm_active_p95 = max_opt(g.sm_active_p95, e.sm_active_p95);
    g.sm_occupancy_p95 = max_opt(g.sm_occupancy_p95, e.sm_occupancy_p95);
    g.dram_active_p95 = max_opt(g.dram_active_p95, e.dram_active_p95);
    g.tensor_active_p95 = max_opt(g.tensor_active_p95, e.tensor_active_p95);
    g.evidence_seconds += e.evidence_seconds;
    g.steadiness_thousandths = std::min(g.steadiness_thousandths, e.steadiness_thousandths);
    if (g.sm_source != e.sm_source) g.sm_source = g.sm_source.empty() ? e.sm_source : "mixed";
    g.busy_share = std::max(g.busy_share, e.busy_share);
    g.idle_seconds_longest = std::max(g.idle_seconds_longest, e.idle_seconds_longest);
    g.windows += e.windows;
    g.launches += e.launches;
    g.device_suspect_windows += e.device_suspect_windows;
    for (const auto& [key, n] : e.device_findings) g.device_findings[key] += n;
    for (const auto& x : e.sources)
      if (std::find(g.sources.begin(), g.sources.end(), x) == g.sources.end()) g.sources.push_back(x);
    for (const auto& x : e.models)
      if (std::find(g.models.begin(), g.models.end(), x) == g.models.end()) g.models.push_back(x);
  }
  for (auto& [k, rec] : rows) {
    // A group's why is its first pod's, named.
    if (rec.members.size() > 1) rec.why = std::to_string(rec.members.size()) + " pods; " + rec.members.front() + ": " + rec.why;
    r.rows.push_back(std::move(rec));
  }
  std::stable_sort(r.rows.begin(), r.rows.end(), [](const Recommendation& a, const Recommendation& b) {
    const int64_t sa = a.saving_per_month_micros.value_or(-1), sb = b.saving_per_month_micros.value_or(-1);
    if (sa != sb) return sa > sb;
    return a.key < b.key;
  });
  return r;
}

Rightsizing rightsize(const std::vector<WindowRecord>& windows, int64_t from, int64_t to, GroupBy by,
                      const RightsizingOptions& options) {
  RightsizingBuilder b(from, to, by, options);
  for (const auto& w : windows) b.add(w);
  return b.finish();
}

Rightsizing rightsize(const ledger::Store& store, int64_t from, int64_t to, GroupBy by,
                      const RightsizingOptions& options) {
  RightsizingBuilder b(from, to, by, options);
  Spans covered;  // the windows' spans in the range, for where the idle runs came from
  store.for_each_window(from, to, [&](WindowRecord&& w) {
    covered.emplace_back(std::max(w.start, from), std::min(w.end, to));
    b.add(w);
  });
  Rightsizing r = b.finish();
  add_probe_set_note(r, covered, store.hot_path_not_probed(from, to));
  return r;
}

}  // namespace gpuledger::report
