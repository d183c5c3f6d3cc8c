// Aggregation: windows in, rows out, one window at a time.
#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "common/recent_map.h"
#include "ledger/device_quality.h"
#include "ledger/efficiency_mean.h"
#include "ledger/hourly_rollup.h"
#include "ledger/prices.h"
#include "ledger/share_seconds.h"
#include "report/chart_time.h"
#include "report/memory_size_note.h"
#include "report/probe_set_note.h"
#include "report/report.h"
#include "report/special_accounts.h"
#include "report/split_sources.h"

namespace gpuledger::report {

using ledger::AccountRecord;
using ledger::ChargeKind;
using ledger::WindowRecord;

namespace {

// __idle__, __unallocated__, __overflow__ and any other "__name__" account (special_accounts.h).

void add_opt(std::optional<double>& to, const std::optional<double>& v) {
  if (v) to = to.value_or(0) + *v;
}

bool has_device_reading(const ledger::Efficiency& e) {
  return e.sm_active || e.sm_occupancy || e.tensor_active || e.dram_active;
}

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

// A window's device quality counts; not judged (before schema 9): ok with a
// device reading, else absent.
ledger::WindowRecord::DeviceQualityCounts quality_of(const WindowRecord& w) {
  if (w.device_quality.judged() > 0) return w.device_quality;
  ledger::WindowRecord::DeviceQualityCounts q;
  (has_device_reading(w.device) ? q.ok : q.absent) = 1;
  return q;
}

}  // namespace

void Row::add_cost(ChargeKind kind, int64_t micros) {
  (kind == ChargeKind::kBusy ? cost_busy_micros : kind == ChargeKind::kMemory ? cost_memory_micros : cost_idle_micros) +=
      micros;
}

namespace {
std::optional<double> ratio_of(double part, double whole) {
  return whole > 0 ? std::optional<double>(part / whole) : std::nullopt;
}
}  // namespace

// Unknown for the whole range when any of its windows had it unknown: a
// share over the known windows alone would pass for the row's.
std::optional<double> Row::allocated_share() const {
  return allocated_unknown_hours > 0 ? std::nullopt : ratio_of(allocated_hours, share_hours);
}
std::string Row::device_data() const {
  if (device_suspect_windows > 0) return "suspect";
  if (device_ok_windows > 0) return "ok";
  if (device_absent_windows > 0) return "absent";
  return "";
}

std::optional<double> Row::used_share() const { return ratio_of(used_hours, share_hours); }
std::optional<double> Row::used_vram_share() const { return ratio_of(vram_used_hours, share_hours); }
std::optional<double> Row::used_energy_share() const { return ratio_of(energy_used_hours, energy_share_hours); }
ledger::ShareFlag Row::share_flag() const {
  if (is_special_account(key) || !(share_hours > 0) || !allocated_share()) return ledger::ShareFlag::kNone;
  return ledger::share_flag(*allocated_share(), *used_share());
}

std::string team_key(const std::string& account, const std::string& team) {
  if (is_special_account(account)) return account;
  return team.empty() ? "(no team)" : team;
}

std::string group_key(GroupBy by, const WindowRecord& w, const AccountRecord& a) {
  if (by == GroupBy::kGpu) return w.slot.uuid;
  if (by == GroupBy::kNode) return w.node.empty() ? "(this node)" : w.node;  // idle and unallocated included
  if (is_special_account(a.account)) return a.account;
  switch (by) {
    case GroupBy::kTeam: return team_key(a.account, a.labels.team);
    case GroupBy::kNamespace: return a.labels.namespace_name.empty() ? "(no namespace)" : a.labels.namespace_name;
    case GroupBy::kUser: return a.labels.slurm_user.empty() ? "(no Slurm user)" : a.labels.slurm_user;
    case GroupBy::kAccount: return a.labels.slurm_account.empty() ? "(no Slurm account)" : a.labels.slurm_account;
    case GroupBy::kPod:
      return a.labels.pod.empty() ? a.account : a.labels.namespace_name + "/" + a.labels.pod;
    default: return a.account;
  }
}

struct ReportBuilder::State {
  struct Group {
    Row row;
    ledger::EfficiencyMean efficiency;
    // Of what it held: per ratio, the group's value x window GPU-hours and its
    // held share x window GPU-hours, over the windows where the value is known.
    std::array<double, 4> held_num{}, held_den{};
  };
  ledger::EfficiencyMean gpu_efficiency;  // the device's values, weighted by window x GPU fraction
  int64_t from, to;
  GroupBy by;
  std::map<std::string, Group> groups;
  std::map<std::string, std::map<std::string, Row>> pods_by_team;
  std::map<int64_t, std::map<std::string, int64_t>> cost_by_start;  // window start -> team -> micros
  std::set<std::string> currencies;
  int64_t min_window = 0;
  Coverage coverage;
  std::vector<std::pair<int64_t, int64_t>> spans, watched;  // windows' [start, end) in the range
  RecentMap<std::string, bool> gpu_has_device;              // a window's GPU is most often the last one's
  std::set<std::string> gpu_suspect;
  // Coverage's windows by device quality and split source, counted here and
  // put in its maps at finish: three map lookups by a name made each window.
  ledger::WindowRecord::DeviceQualityCounts quality_windows;
  std::vector<std::pair<std::string, int64_t>> split_source_windows;  // by stored value, as met
  std::map<std::string, ModelPrice> prices;
  std::unique_ptr<RightsizingBuilder> rightsizing;  // by pod when the report is by GPU; null: none asked for

  // An account's groups, found once (std::map nodes do not move) and again
  // only when its labels change; --by gpu groups by the window's GPU instead.
  struct AccountKeys {
    ledger::AccountLabels labels;
    std::string team;
    Row* pod = nullptr;
    Group* group = nullptr;
  };
  std::unordered_map<std::string, AccountKeys> keys;
  const AccountKeys& keys_for(const WindowRecord& w, const AccountRecord& a) {
    auto [it, fresh] = keys.try_emplace(a.account);
    AccountKeys& k = it->second;
    if (fresh || !(k.labels == a.labels)) {
      k.labels = a.labels;
      k.team = group_key(GroupBy::kTeam, w, a);
      k.pod = &pods_by_team[k.team][group_key(GroupBy::kPod, w, a)];
      if (by != GroupBy::kGpu && by != GroupBy::kNode) k.group = &groups[group_key(by, w, a)];
      if (by == GroupBy::kPod || by == GroupBy::kWorkload) k.group->row.team = k.team;
    }
    // By GPU or node the group is the window's, not the account's.
    if ((by == GroupBy::kGpu || by == GroupBy::kNode) && (fresh || k.group->row.key != group_key(by, w, a))) {
      const std::string key = group_key(by, w, a);
      k.group = &groups[key];
      k.group->row.key = key;
    }
    return k;
  }
  ledger::WindowRecord::DeviceQualityCounts count_window(const WindowRecord& w, double gpu_hours);
  class WindowAccounts;
};

// One window's accounts: its records, then those charged without a record of
// their own (none today, but they still get a row), and each record's groups
// as keys_for finds them, once a window: a window's charges, energy and shares
// name its accounts again (15 more lookups of a name and its labels a window
// of three accounts, 8 % of a fleet report's client). Copied, not pointed at:
// a window naming an account twice with two sets of labels moves that
// account's AccountKeys between them. A window has a handful of accounts:
// vectors searched in place beat maps.
class ReportBuilder::State::WindowAccounts {
 public:
  struct Found {
    const AccountRecord* record;
    Row* pod;
    Group* group;
    std::string team;
  };
  WindowAccounts(State& s, const WindowRecord& w) : s_(s), w_(w) {
    records_.reserve(w.accounts.size() + w.charges.size());
    for (const auto& a : w.accounts) records_.push_back(&a);
    synthetic_.reserve(w.charges.size() + (w.energy ? w.energy->charges.size() : 0));
    for (const auto& ch : w.charges) ensure_record(ch.account);
    if (w.energy)
      for (const auto& e : w.energy->charges) ensure_record(e.account);
    found_.reserve(records_.size());
  }
  const std::vector<const AccountRecord*>& records() const { return records_; }
  const AccountRecord* record_of(std::string_view account) const {
    for (const AccountRecord* r : records_)
      if (r->account == account) return r;
    return nullptr;
  }
  void ensure_record(std::string_view account) {
    if (record_of(account)) return;
    synthetic_.push_back(AccountRecord{});  // never reallocated: pointed at by records_
    synthetic_.back().account = std::string(account);
    records_.push_back(&synthetic_.back());
  }
  const Found& keys_of(const AccountRecord* record) {
    for (const Found& f : found_)
      if (f.record == record) return f;
    const AccountKeys& k = s_.keys_for(w_, *record);
    return found_.emplace_back(Found{record, k.pod, k.group, k.team});
  }

 private:
  State& s_;
  const WindowRecord& w_;
  std::vector<const AccountRecord*> records_;
  std::vector<AccountRecord> synthetic_;
  std::vector<Found> found_;
};

ReportBuilder::ReportBuilder(int64_t from, int64_t to, GroupBy by, const std::optional<RightsizingOptions>& rightsizing)
    : s_(std::make_unique<State>()) {
  s_->from = from;
  s_->to = to;
  s_->by = by;
  if (rightsizing)
    s_->rightsizing = std::make_unique<RightsizingBuilder>(
        from, to, by == GroupBy::kGpu || by == GroupBy::kNode ? GroupBy::kPod : by, *rightsizing);
}

ReportBuilder::~ReportBuilder() = default;

namespace {
std::vector<std::pair<int64_t, int64_t>> merge_spans(std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& sp : spans) {
    if (!out.empty() && sp.first <= out.back().second)
      out.back().second = std::max(out.back().second, sp.second);
    else
      out.push_back(sp);
  }
  return out;
}
int64_t length_before(const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t end) {
  int64_t n = 0;
  for (const auto& [a, b] : spans) n += std::max<int64_t>(0, std::min(b, end) - a);
  return n;
}
}  // namespace

void add_time_coverage(Report& r, std::optional<int64_t> first_window_start, int64_t generated_at) {
  Coverage& c = r.coverage;
  const int64_t billed_end = generated_at > r.from ? std::min(r.to, generated_at) : (generated_at ? r.from : r.to);
  c.seconds_future = r.to - billed_end;
  const int64_t covered = length_before(r.covered_spans, billed_end);
  c.seconds_watched = length_before(r.watched_spans, billed_end);
  c.seconds_agent_down = covered - c.seconds_watched;
  // Nothing is stored before the first window: that time the agent had not started.
  const int64_t agent_start = first_window_start ? std::clamp(*first_window_start, r.from, billed_end) : billed_end;
  c.seconds_before_agent = agent_start - r.from;
  c.seconds_no_data = std::max<int64_t>(0, billed_end - r.from - covered - c.seconds_before_agent);
}

// The window in the coverage, its GPU's device state and its model's price; its device data's quality.
ledger::WindowRecord::DeviceQualityCounts ReportBuilder::State::count_window(const WindowRecord& w, double gpu_hours) {
  const int64_t len_s = w.end - w.start;
  const double len = static_cast<double>(len_s);
  Coverage& c = coverage;
  ++c.windows;
  const std::pair<int64_t, int64_t> span{std::max(w.start, from), std::min(w.end, to)};
  if (span.first < span.second) {
    spans.push_back(span);
    if (w.source != "backfill" && w.source != "gap") watched.push_back(span);
  }
  const bool device = has_device_reading(w.device);
  if (!device) ++c.windows_without_device;
  auto split = std::find_if(split_source_windows.begin(), split_source_windows.end(),
                            [&](const auto& e) { return e.first == w.split_source; });
  if (split == split_source_windows.end()) split = split_source_windows.insert(split, {w.split_source, 0});
  ++split->second;
  if (len_s >= ledger::kRollupSeconds) ++c.hourly_windows;
  c.window_gpu_hours += gpu_hours;
  c.observed_gpu_hours += std::min(w.observed_seconds, len) * w.gpu_fraction / 3600.0;
  gpu_has_device[w.slot.uuid] |= device;
  const auto quality = quality_of(w);
  c.device_quality_judged = c.device_quality_judged || w.device_quality.judged() > 0;
  quality_windows.ok += quality.ok;
  quality_windows.suspect += quality.suspect;
  quality_windows.absent += quality.absent;
  for (const auto& [key, n] : w.device_findings) c.device_findings[key] += n;
  if (quality.suspect > 0) gpu_suspect.insert(w.slot.uuid);
  ModelPrice& price = prices[w.slot.model];
  price.model = w.slot.model;
  price.cost_micros += w.cost_micros;
  price.gpu_hours += gpu_hours;
  return quality;
}

void ReportBuilder::add(const WindowRecord& w) {
  State& s = *s_;
  s.currencies.insert(w.currency);
  const auto window_shares = ledger::share_seconds(w);  // for the rows and the recommendations
  if (s.rightsizing) s.rightsizing->add(w, window_shares);
  const int64_t len_s = w.end - w.start;
  const double len = static_cast<double>(len_s);
  const double gpu_hours = len * w.gpu_fraction / 3600.0;
  if (s.min_window == 0 || len_s < s.min_window) s.min_window = len_s;

  Coverage& c = s.coverage;
  const auto quality = s.count_window(w, gpu_hours);

  State::WindowAccounts accounts(s, w);
  s.gpu_efficiency.add(w.device, len * w.gpu_fraction);
  struct GroupWindow {
    State::Group* group;
    ledger::Efficiency value;  // the group's part of the GPU in this window
    double held = 0;           // the group's held share of the slot
  };
  std::vector<GroupWindow> window_efficiency;  // the groups' values here
  std::string split_name;                      // the window's split source, named when first needed
  for (const AccountRecord* a : accounts.records()) {
    const auto& k = accounts.keys_of(a);
    Row& row = k.group->row;
    const double held = a->held_share * len * w.gpu_fraction / 3600.0;
    row.gpu_hours_held += held;
    row.gpu_hours_busy += a->gpu_busy_seconds * w.gpu_fraction / 3600.0;
    row.vram_gib_hours += a->vram_byte_seconds / kBytesPerGiB / 3600.0;
    row.launches += a->launches;
    if (a->used_unallocated_seconds || a->allocated_unused_seconds) {
      c.use_observed = true;
      auto add_hours = [&](std::optional<double>& into, const std::optional<double>& seconds) {
        if (seconds) into = into.value_or(0) + *seconds * w.gpu_fraction / 3600.0;
      };
      add_hours(row.used_unallocated_hours, a->used_unallocated_seconds);
      add_hours(row.allocated_unused_hours, a->allocated_unused_seconds);
    }
    if (a->gpu_busy_seconds > 0) {
      if (split_name.empty()) split_name = split_source_name(w.split_source);
      row.split_busy_hours[split_name] += a->gpu_busy_seconds * w.gpu_fraction / 3600.0;
    }
    auto e = std::find_if(window_efficiency.begin(), window_efficiency.end(),
                          [&](const GroupWindow& ge) { return ge.group == k.group; });
    if (e == window_efficiency.end()) e = window_efficiency.insert(e, {k.group, {}, 0});
    if (s.by == GroupBy::kGpu) {
      e->value = w.device;
      e->held = 1;  // a GPU holds all of itself
    } else {
      add_opt(e->value.sm_active, a->efficiency.sm_active);
      add_opt(e->value.sm_occupancy, a->efficiency.sm_occupancy);
      add_opt(e->value.tensor_active, a->efficiency.tensor_active);
      add_opt(e->value.dram_active, a->efficiency.dram_active);
      e->held += a->held_share;
    }
    k.pod->gpu_hours_held += held;
    k.pod->gpu_hours_busy += a->gpu_busy_seconds * w.gpu_fraction / 3600.0;
  }
  for (auto& [group, e, held] : window_efficiency) {
    group->row.device_ok_windows += quality.ok;
    group->row.device_suspect_windows += quality.suspect;
    group->row.device_absent_windows += quality.absent;
    for (const auto& [key, n] : w.device_findings) group->row.device_findings[key] += n;
    group->efficiency.add(e, len * w.gpu_fraction);
    if (s.by == GroupBy::kGpu) group->row.efficiency_hours += gpu_hours;
    const std::optional<double>* values[4] = {&e.sm_active, &e.sm_occupancy, &e.tensor_active, &e.dram_active};
    for (int i = 0; i < 4; ++i) {
      if (!*values[i]) continue;
      group->held_num[i] += **values[i] * gpu_hours;
      group->held_den[i] += held * gpu_hours;
    }
  }
  std::map<std::string, int64_t>* cost_now = nullptr;
  for (const auto& ch : w.charges) {
    const auto& k = accounts.keys_of(accounts.record_of(ch.account));
    Row& row = k.group->row;
    row.add_cost(ch.kind, ch.micros);
    k.pod->add_cost(ch.kind, ch.micros);
    if (!cost_now) cost_now = &s.cost_by_start[w.start];
    (*cost_now)[k.team] += ch.micros;
  }
  add_energy(w, [&](const std::string& account) -> Row& {
    return accounts.keys_of(accounts.record_of(account)).group->row;
  });

  // Allocated against used: the group's shares in this window (its accounts'
  // summed). Not by GPU: a GPU's accounts together hold and use all of it.
  if (s.by == GroupBy::kGpu) return;
  // One window's part per account (share_seconds.h, as /metrics counts it for
  // fleet reports), summed per group; a group's window counts once, however
  // many of its accounts were on the slot.
  struct GroupShares {
    Row* row;
    ledger::ShareSeconds sum;
  };
  std::vector<GroupShares> shares;
  for (const auto& [account, part] : window_shares) {
    accounts.ensure_record(account);
    Row* row = &accounts.keys_of(accounts.record_of(account)).group->row;
    auto g = std::find_if(shares.begin(), shares.end(), [&](const GroupShares& x) { return x.row == row; });
    (g == shares.end() ? shares.emplace_back(GroupShares{row, {}}) : *g).sum += part;
  }
  constexpr double kSecondsPerHour = 3600.0;
  for (const auto& [row, sum] : shares) {
    row->share_hours += gpu_hours;
    row->allocated_hours += sum.allocated / kSecondsPerHour;
    if (sum.allocated_unknown > 0) row->allocated_unknown_hours += gpu_hours;
    row->used_hours += sum.used_activity / kSecondsPerHour;
    row->vram_used_hours += sum.used_vram / kSecondsPerHour;
    if (sum.energy_share > 0) {
      row->energy_share_hours += gpu_hours;
      row->energy_used_hours += sum.used_energy / kSecondsPerHour;
    }
  }
}

void add_energy(const WindowRecord& w, const std::function<Row&(const std::string&)>& row_of) {
  if (!w.energy) return;
  for (const auto& e : w.energy->charges) {
    Row& row = row_of(e.account);
    row.energy_millijoules = row.energy_millijoules.value_or(0) + e.millijoules;
    if (w.energy->carbon_g_per_kwh)
      row.carbon_grams = row.carbon_grams.value_or(0) + ledger::millijoules_to_kwh(e.millijoules) * *w.energy->carbon_g_per_kwh;
  }
}

void add_energy_totals(Row& total, const Row& row) {
  if (row.energy_millijoules) total.energy_millijoules = total.energy_millijoules.value_or(0) + *row.energy_millijoules;
  if (row.carbon_grams) total.carbon_grams = total.carbon_grams.value_or(0) + *row.carbon_grams;
}

void ReportBuilder::use_chart_costs(const ChartCosts& costs) {
  State& s = *s_;
  s.cost_by_start.erase(s.cost_by_start.lower_bound(costs.from), s.cost_by_start.lower_bound(costs.to));
  for (const auto& [start, teams] : costs.cost_by_start)
    for (const auto& [team, micros] : teams) s.cost_by_start[start][team] += micros;
  if (costs.min_window > 0 && (s.min_window == 0 || costs.min_window < s.min_window)) s.min_window = costs.min_window;
}

ChartCosts ReportBuilder::chart_costs() const {
  return {s_->from, s_->to, s_->min_window, s_->cost_by_start};
}

Report ReportBuilder::finish() {
  State& s = *s_;
  Report r;
  r.from = s.from;
  r.to = s.to;
  r.by = s.by;
  if (s.currencies.size() > 1) throw Error("the range mixes currencies; report a range with one currency");
  if (!s.currencies.empty()) r.currency = *s.currencies.begin();
  for (auto& [key, g] : s.groups) {
    g.row.key = key;
    g.row.efficiency = g.efficiency.mean();
    std::optional<double>* held[4] = {&g.row.efficiency_of_held.sm_active, &g.row.efficiency_of_held.sm_occupancy,
                                      &g.row.efficiency_of_held.tensor_active, &g.row.efficiency_of_held.dram_active};
    for (int i = 0; i < 4; ++i)
      if (g.held_den[i] > 0) *held[i] = g.held_num[i] / g.held_den[i];
    if (s.by != GroupBy::kGpu) g.row.efficiency_hours = g.row.gpu_hours_held;
    r.rows.push_back(g.row);
  }
  // Cost over time by team, in at most 48 round buckets of whole windows.
  const int64_t span = std::max<int64_t>(1, s.to - s.from);
  const int64_t bucket = chart_bucket_seconds(span, s.min_window > 0 ? s.min_window : 1);
  r.bucket_seconds = bucket;
  std::map<int64_t, std::map<std::string, int64_t>> series;
  for (const auto& [start, teams] : s.cost_by_start) {
    const int64_t b = s.from + (start - s.from) / bucket * bucket;
    for (const auto& [team, micros] : teams) series[b][team] += micros;
  }
  r.cost_by_team_over_time.assign(series.begin(), series.end());

  r.gpu_efficiency = s.gpu_efficiency.mean();
  r.covered_spans = merge_spans(std::move(s.spans));
  r.watched_spans = merge_spans(std::move(s.watched));
  r.coverage = s.coverage;
  for (const auto& [stored, n] : s.split_source_windows)
    r.coverage.windows_by_split_source[split_source_name(stored)] += n;
  if (s.coverage.windows > 0) {  // every window counted in all three, as JSON's coverage shows them
    r.coverage.windows_by_device_quality["ok"] += s.quality_windows.ok;
    r.coverage.windows_by_device_quality["suspect"] += s.quality_windows.suspect;
    r.coverage.windows_by_device_quality["absent"] += s.quality_windows.absent;
  }
  for (const auto& [uuid, device] : s.gpu_has_device.all()) {
    r.coverage.gpus.push_back(uuid);
    if (!device) r.coverage.gpus_without_device.push_back(uuid);
  }
  r.coverage.gpus_device_suspect.assign(s.gpu_suspect.begin(), s.gpu_suspect.end());
  for (const auto& [model, p] : s.prices) r.prices.push_back(p);
  r.teams = team_sections(s.pods_by_team);
  finish_report(r);
  r.total.device_ok_windows = r.coverage.windows_by_device_quality["ok"];
  r.total.device_suspect_windows = r.coverage.windows_by_device_quality["suspect"];
  r.total.device_absent_windows = r.coverage.windows_by_device_quality["absent"];
  r.total.device_findings = r.coverage.device_findings;
  if (r.total.device_suspect_windows > 0) {
    std::string gpus;
    for (size_t i = 0; i < r.coverage.gpus_device_suspect.size() && i < 5; ++i)
      gpus += (i ? ", " : "") + r.coverage.gpus_device_suspect[i];
    if (r.coverage.gpus_device_suspect.size() > 5)
      gpus += " and " + std::to_string(r.coverage.gpus_device_suspect.size() - 5) + " more";
    r.notes.push_back("Device data suspect in " + std::to_string(r.total.device_suspect_windows) + " of " +
                      std::to_string(r.coverage.windows) + " windows (" + gpus + "; " +
                      ledger::describe_findings(r.coverage.device_findings) +
                      "): the cross-checks of DCGM, NVML and the probes disagreed, so those windows' suspect values "
                      "are not used for efficiency, waste or advice; a value they leave unknown is shown as "
                      "\"suspect\", never as 0 %.");
  }
  if (s.rightsizing) r.rightsizing = s.rightsizing->finish();
  return r;
}

std::vector<TeamPods> team_sections(const std::map<std::string, std::map<std::string, Row>>& pods_by_team) {
  auto by_cost = [](const Row& a, const Row& b) {
    if (a.cost_total_micros() != b.cost_total_micros()) return a.cost_total_micros() > b.cost_total_micros();
    return a.key < b.key;
  };
  std::vector<TeamPods> teams;
  for (const auto& [team, pods] : pods_by_team) {
    TeamPods t;
    t.team = team;
    t.total.key = team;
    for (const auto& [pod, row] : pods) {
      t.total.gpu_hours_held += row.gpu_hours_held;
      t.total.gpu_hours_busy += row.gpu_hours_busy;
      t.total.cost_busy_micros += row.cost_busy_micros;
      t.total.cost_idle_micros += row.cost_idle_micros;
      t.total.cost_memory_micros += row.cost_memory_micros;
      t.top_pods.push_back(row);
      t.top_pods.back().key = pod;
    }
    std::sort(t.top_pods.begin(), t.top_pods.end(), by_cost);
    if (t.top_pods.size() > 5) t.top_pods.resize(5);
    teams.push_back(std::move(t));
  }
  std::stable_sort(teams.begin(), teams.end(),
                   [&](const TeamPods& a, const TeamPods& b) { return by_cost(a.total, b.total); });
  return teams;
}

Report build_report(const std::vector<WindowRecord>& windows, int64_t from, int64_t to, GroupBy by,
                    const RightsizingOptions& rightsizing) {
  ReportBuilder b(from, to, by, rightsizing);
  for (const auto& w : windows) b.add(w);
  return b.finish();
}

Report build_report(const ledger::Store& store, int64_t from, int64_t to, GroupBy by,
                    const RightsizingOptions& rightsizing) {
  ReportBuilder b(from, to, by, rightsizing);
  store.for_each_window(from, to, [&](WindowRecord&& w) { b.add(w); });
  Report r = b.finish();
  add_memory_size_note(r, store.memory_size_unknown(from, to));
  add_probe_set_note(r, store.hot_path_not_probed(from, to));
  return r;
}

namespace {
constexpr std::string_view kShareUnknownNote = "Allocated share unknown";
}  // namespace

void finish_report(Report& r) {
  std::sort(r.rows.begin(), r.rows.end(), [](const Row& a, const Row& b) {
    if (a.cost_total_micros() != b.cost_total_micros()) return a.cost_total_micros() > b.cost_total_micros();
    return a.key < b.key;
  });
  r.total = Row();
  r.total.key = "TOTAL";
  ledger::EfficiencyMean efficiency;
  for (const auto& row : r.rows) {
    r.total.gpu_hours_held += row.gpu_hours_held;
    r.total.gpu_hours_busy += row.gpu_hours_busy;
    r.total.cost_busy_micros += row.cost_busy_micros;
    r.total.cost_idle_micros += row.cost_idle_micros;
    r.total.cost_memory_micros += row.cost_memory_micros;
    r.total.vram_gib_hours += row.vram_gib_hours;
    r.total.launches += row.launches;
    for (auto [total, part] : {std::pair{&r.total.used_unallocated_hours, &row.used_unallocated_hours},
                               std::pair{&r.total.allocated_unused_hours, &row.allocated_unused_hours}})
      if (*part) *total = total->value_or(0) + **part;
    for (const auto& [source, h] : row.split_busy_hours) r.total.split_busy_hours[source] += h;
    r.total.efficiency_hours += row.efficiency_hours;
    add_energy_totals(r.total, row);
    efficiency.add(row.efficiency, row.efficiency_hours);
  }
  // One definition whatever the grouping: the GPUs' own values over the range,
  // weighted by GPU-time; a report without the windows (a fleet report)
  // weights its rows' values by their GPU-hours instead.
  r.total.efficiency = r.gpu_efficiency ? *r.gpu_efficiency : efficiency.mean();
  r.total.efficiency_of_held = r.total.efficiency;
  r.top_wasters.clear();
  for (const auto& row : r.rows)
    if (row.cost_idle_micros > 0 && !is_special_account(row.key)) r.top_wasters.push_back(row);
  std::stable_sort(r.top_wasters.begin(), r.top_wasters.end(),
                   [](const Row& a, const Row& b) { return a.cost_idle_micros > b.cost_idle_micros; });
  if (r.top_wasters.size() > 5) r.top_wasters.resize(5);
  r.over_users.clear();
  r.under_users.clear();
  for (const auto& row : r.rows) {
    const ledger::ShareFlag flag = row.share_flag();
    if (flag == ledger::ShareFlag::kOver) r.over_users.push_back(row);
    if (flag == ledger::ShareFlag::kUnder) r.under_users.push_back(row);
  }
  auto by_gap = [](const Row& a, const Row& b) {
    const double ga = std::abs(*a.used_share() - *a.allocated_share()), gb = std::abs(*b.used_share() - *b.allocated_share());
    return ga != gb ? ga > gb : a.key < b.key;
  };
  std::sort(r.over_users.begin(), r.over_users.end(), by_gap);
  std::sort(r.under_users.begin(), r.under_users.end(), by_gap);
  // Caveats, in plain words.
  r.notes.erase(std::remove_if(r.notes.begin(), r.notes.end(),
                               [](const std::string& n) {
                                 return n.rfind("No prices", 0) == 0 || n.rfind(kShareUnknownNote, 0) == 0;
                               }),
                r.notes.end());
  std::vector<std::string> share_unknown;
  for (const auto& row : r.rows)
    if (row.allocated_unknown_hours > 0 && !is_special_account(row.key)) share_unknown.push_back(row.key);
  if (!share_unknown.empty()) {
    std::string names;
    for (size_t i = 0; i < share_unknown.size() && i < 5; ++i) names += (i ? ", " : "") + share_unknown[i];
    if (share_unknown.size() > 5) names += " and " + std::to_string(share_unknown.size() - 5) + " more";
    r.notes.push_back(std::string(kShareUnknownNote) + " for " + names +
                      ": they held replicas of a device whose replica count the node could not tell (neither the "
                      "kubelet's allocatable devices nor a nvidia.com/gpu.replicas label), so their allocated "
                      "share is shown as unknown and they are named neither over- nor under-users.");
  }
  if (r.total.cost_total_micros() == 0 && (r.total.gpu_hours_held > 0 || r.coverage.windows > 0))
    r.notes.insert(r.notes.begin(),
                   "No prices are configured: every GPU-hour in this range was billed at 0. Give the agent a "
                   "price list (--prices FILE, or a `cost:` section in --config) to bill it.");
}

}  // namespace gpuledger::report
