// Rightsizing: evidence per unit, then one decision each (rightsizing.h).
#include "report/rightsizing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "ledger/allocation_use.h"
#include "ledger/share_seconds.h"
#include "ledger/window_evidence.h"
#include "report/report.h"
#include "report/report_text.h"

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
  throw Error("--by: unknown grouping '" + text + "' (pod, workload, namespace or team)");
}

namespace {

bool is_special(const std::string& account) {
  return account == ledger::kIdleAccount || account == ledger::kUnallocatedAccount;
}

// Rounded half up: a x b / c, all non-negative, without overflow.
int64_t mul_div(int64_t a, int64_t b, int64_t c) {
  if (c <= 0) return 0;
  const __int128 n = static_cast<__int128>(a) * b;
  return static_cast<int64_t>((n + c / 2) / c);
}

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
    if (total_ <= 0) return std::nullopt;
    const int64_t rank = (95 * total_ + 99) / 100;  // nearest rank, as ledger::weighted_p95
    int64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i)
      if ((seen += counts_[i]) >= rank) return static_cast<double>(i) / kSteps;
    return 1.0;
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

// Everything one unit (a pod or a workload) did in the range.
struct Unit {
  std::string group;  // its row's key (the unit itself, or its namespace / team)
  std::map<std::string, std::vector<Segment>> segments;  // by slot: idle runs, joined in time order at the end
  std::map<std::string, std::pair<int64_t, std::string>> last_window;  // by slot: (start, account) counted
  std::optional<uint64_t> vram_peak, nvml_peak;
  BytesHistogram vram, nvml;
  RatioHistogram sm, occupancy, busy;
  double busy_seconds = 0, held_seconds = 0, present_seconds = 0, slot_fraction_seconds = 0;
  bool device_busy = false;
  int64_t windows = 0;
  uint64_t launches = 0;
  int64_t paid = 0, idle_paid = 0, held_window_cost = 0;
  ledger::ShareSeconds shares;
  std::set<std::string> models;
  std::set<int> held_slices;  // compute slices of what it holds: a whole GPU's table slices, a MIG profile's n
  bool mig_slot = false;
};

std::optional<uint64_t> max_opt(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

std::string gib(uint64_t bytes) { return fixed(static_cast<double>(bytes) / 1e9, 2) + " GB"; }

std::string duration_words(double seconds) {
  if (seconds >= 86400 && static_cast<int64_t>(seconds) % 3600 == 0)
    return fixed(seconds / 86400.0, seconds / 86400.0 == static_cast<int64_t>(seconds / 86400.0) ? 0 : 1) + " d";
  if (seconds >= 3600) return fixed(seconds / 3600.0, 1) + " h";
  return fixed(seconds / 60.0, 0) + " min";
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

void RightsizingBuilder::add(const WindowRecord& w) {
  State& s = *s_;
  s.currencies.insert(w.currency);
  s.first_start = std::min(s.first_start.value_or(w.start), w.start);
  s.last_end = std::max(s.last_end.value_or(w.end), w.end);
  const double len = static_cast<double>(w.end - w.start);
  // The agent did not watch backfill and gap windows: no evidence of idleness or use.
  const bool watched = w.source != "backfill" && w.source != "gap";
  const int table_slices = s.mig_slices(w.slot.model);
  const auto shares = ledger::share_seconds(w);
  std::set<const Unit*> seen;  // units met in this window already
  std::map<Unit*, ledger::IdleRun> runs;  // each unit's idle run in this window
  for (const auto& a : w.accounts) {
    if (is_special(a.account)) continue;
    Unit& u = s.unit_of(w, a);
    const bool first_in_window = seen.insert(&u).second;
    int64_t charged = 0;  // a window has a handful of charges: searched in place
    for (const auto& c : w.charges)
      if (c.account == a.account) charged += c.micros;
    u.paid += charged;
    u.models.insert(w.slot.model);
    u.launches += a.launches;
    u.busy_seconds += a.gpu_busy_seconds;
    u.held_seconds += a.held_share * len;
    if (first_in_window) u.present_seconds += len;
    u.slot_fraction_seconds += a.held_share * len;
    if (w.busy_source == "device") u.device_busy = true;
    if (auto it = shares.find(a.account); it != shares.end()) {
      // A unit's window counts once however many of its accounts were on the
      // slot (as the report's allocated against used); their shares add up.
      ledger::ShareSeconds part = it->second;
      if (!first_in_window) part.share = 0, part.energy_share = 0;
      u.shares += part;
    }
    if (a.held_share > 0) {
      // A unit's several accounts on one slot in one window pay for its window once.
      auto& last = u.last_window[w.slot.uuid];
      if (last.first != w.start || last.second.empty()) {
        last = {w.start, a.account};
        u.held_window_cost += w.cost_micros;
      }
      if (w.slot.mig_profile) {
        if (auto n = ledger::mig_profile_slices(*w.slot.mig_profile)) u.held_slices.insert(*n);
        u.mig_slot = true;
      } else {
        u.held_slices.insert(table_slices);
      }
    }
    const ledger::IdleRun run = watched ? ledger::idle_run(a, len) : ledger::IdleRun{};
    // The unit's accounts in this window are idle together only (two containers of a pod).
    auto [r, fresh_run] = runs.try_emplace(&u, run);
    if (!fresh_run)
      r->second = {std::min(r->second.lead, run.lead), std::min(r->second.trail, run.trail),
                   std::min(r->second.longest, run.longest)};
    if (watched && run.longest + 1e-6 >= len && len > 0) u.idle_paid += charged;
    if (!watched) continue;
    const int64_t n = ledger::window_count(a);
    if (first_in_window) u.windows += n;
    u.vram_peak = max_opt(u.vram_peak, ledger::vram_peak(a));
    u.nvml_peak = max_opt(u.nvml_peak, ledger::nvml_vram_peak(a));
    if (auto v = ledger::vram_p95(a)) u.vram.add(*v, n);
    if (auto v = ledger::nvml_vram_p95(a)) u.nvml.add(*v, n);
    if (auto v = ledger::sm_active_p95(a)) u.sm.add(*v, n);
    if (auto v = ledger::sm_occupancy_p95(a)) u.occupancy.add(*v, n);
    u.busy.add(ledger::busy_p95(a, len), n);
  }
  for (const auto& [u, run] : runs) append(u->segments[w.slot.uuid], {w.start, w.end, run});
}

namespace {

// The longest idle run per slot, its segments joined in time order (a
// segment out of order, or after a window the unit was absent from, starts
// a new one; nothing held in between breaks a run).
double longest_idle(std::map<std::string, std::vector<Segment>> segments) {
  double longest = 0;
  for (auto& [slot, segs] : segments) {
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
  if (e.sm_active_p95) {
    e.sm_source = "device";
  } else if (auto busy = u.busy.p95()) {
    e.sm_active_p95 = busy;  // the eBPF span estimate stands in, labelled
    e.sm_source = "ebpf";
  }
  const double held = u.held_seconds > 0 ? u.held_seconds : u.present_seconds;
  e.busy_share = held > 0 ? std::min(1.0, u.busy_seconds / held) : 0;
  e.idle_seconds_longest = longest_idle(u.segments);
  e.windows = u.windows;
  e.launches = u.launches;
  if (u.vram_peak) e.sources.push_back("probes");
  if (u.nvml_peak) e.sources.push_back("nvml");
  if (!e.sm_source.empty()) e.sources.push_back(e.sm_source);
  e.models.assign(u.models.begin(), u.models.end());
  return e;
}

struct Decision {
  Advice advice = Advice::kKeep;
  std::string target, why;
  bool limited = false;
  int64_t saving = 0;  // over the range
};

std::string pct_text(double v) { return fixed(v * 100.0, 1) + "%"; }

// Whether `peak` x (1 + headroom) fits `bytes`, exactly (headroom in millionths).
bool fits(uint64_t peak, int64_t headroom_micros, uint64_t bytes) {
  return static_cast<unsigned __int128>(peak) * static_cast<unsigned __int128>(1'000'000 + headroom_micros) <=
         static_cast<unsigned __int128>(bytes) * 1'000'000u;
}

Decision decide(const Unit& u, const RightsizingEvidence& e, const RightsizingOptions& o) {
  Decision d;
  const bool device_sm = e.sm_source == "device";
  // 1. release: held with no work for longer than idle_after.
  if (u.held_seconds > 0 && e.idle_seconds_longest > static_cast<double>(o.idle_after_seconds)) {
    d.advice = Advice::kRelease;
    d.saving = u.idle_paid;
    d.why = "held a GPU with no kernel launch for " + duration_words(e.idle_seconds_longest) + " (more than idle_after " +
            duration_words(static_cast<double>(o.idle_after_seconds)) + ")";
    return d;
  }
  // 2. more: an over-user of a shared GPU, or saturated.
  if (u.shares.share > 0 && !(u.shares.allocated_unknown > 0)) {
    const double allocated = u.shares.allocated / u.shares.share, used = u.shares.used_activity / u.shares.share;
    if (ledger::share_flag(allocated, used) == ledger::ShareFlag::kOver) {
      d.advice = Advice::kMore;
      d.why = "used " + fixed(used, 2) + " of its GPU's activity with " + fixed(allocated, 2) +
              " allocated: an over-user of a shared GPU";
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
  const int held_slices = u.held_slices.empty() ? 0 : *u.held_slices.rbegin();
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
      const int64_t saving = u.paid - mul_div(u.held_window_cost, p.compute_slices, held_slices);
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
  if (!table && !u.mig_slot && u.held_seconds > 0) {
    // 4. time-slice: the smallest share that covers its busy share, below what it holds.
    const double held_fraction = u.present_seconds > 0 ? u.slot_fraction_seconds / u.present_seconds : 0;
    for (int k : {8, 4, 2}) {
      const double share = 1.0 / k;
      if (share + 1e-9 < e.busy_share || share + 1e-9 >= held_fraction) continue;
      const int64_t saving = u.paid - mul_div(u.held_window_cost, 1, k);
      if (saving <= 0) continue;
      d.advice = Advice::kTimeSlice;
      d.target = "1/" + std::to_string(k);
      d.saving = saving;
      d.limited = !u.device_busy;
      d.why = "busy " + pct_text(e.busy_share) + " of what it held: a 1/" + std::to_string(k) +
              " time-slice share covers it" +
              (u.device_busy ? "" : "; the busy share is the eBPF span estimate (no device busy reading), so no "
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
  auto per_month = [&](int64_t saving) { return mul_div(std::max<int64_t>(0, saving), kMonthSeconds, r.period_seconds); };
  // Per unit; then, by namespace or team, per (group, advice, target, limited).
  std::map<std::tuple<std::string, Advice, std::string, bool>, Recommendation> rows;
  for (const auto& [key, u] : s.units) {
    const RightsizingEvidence e = evidence_of(u);
    const Decision d = decide(u, e, s.options);
    const bool grouped = s.by == GroupBy::kNamespace || s.by == GroupBy::kTeam;
    const std::string row_key = grouped ? u.group : key;
    auto [it, fresh] = rows.try_emplace({row_key, d.advice, d.target, d.limited});
    Recommendation& rec = it->second;
    rec.members.push_back(key);
    rec.cost_micros += u.paid;
    const int64_t saving = d.limited ? 0 : per_month(d.saving);
    if (fresh) {
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
    RightsizingEvidence& g = rec.evidence;
    g.vram_peak_bytes = max_opt(g.vram_peak_bytes, e.vram_peak_bytes);
    g.vram_p95_bytes = max_opt(g.vram_p95_bytes, e.vram_p95_bytes);
    if (e.sm_active_p95 && (!g.sm_active_p95 || *e.sm_active_p95 > *g.sm_active_p95)) g.sm_active_p95 = e.sm_active_p95;
    if (e.sm_occupancy_p95 && (!g.sm_occupancy_p95 || *e.sm_occupancy_p95 > *g.sm_occupancy_p95))
      g.sm_occupancy_p95 = e.sm_occupancy_p95;
    if (g.sm_source != e.sm_source) g.sm_source = g.sm_source.empty() ? e.sm_source : "mixed";
    g.busy_share = std::max(g.busy_share, e.busy_share);
    g.idle_seconds_longest = std::max(g.idle_seconds_longest, e.idle_seconds_longest);
    g.windows += e.windows;
    g.launches += e.launches;
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
  store.for_each_window(from, to, [&](WindowRecord&& w) { b.add(w); });
  return b.finish();
}

}  // namespace gpuledger::report
