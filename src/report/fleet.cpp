#include "report/fleet.h"

#include <httplib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/window_split.h"
#include "report/special_accounts.h"
#include "report/chart_time.h"
#include "report/fleet_counter.h"
#include "report/report_text.h"

namespace gpuledger::report {

namespace {

using Labels = std::map<std::string, std::string>;
using Series = std::map<Labels, double>;

class Prometheus {
 public:
  Prometheus(const std::string& url, unsigned timeout_ms) : url_(url) {
    auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) throw Error("--prometheus: expected a URL such as http://host:9090");
    auto path_start = url.find('/', scheme_end + 3);
    base_ = url.substr(0, path_start);
    prefix_ = path_start == std::string::npos ? "" : url.substr(path_start);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    client_ = std::make_unique<httplib::Client>(base_);
    if (!client_->is_valid()) throw Error("--prometheus " + url + ": unsupported URL");
    auto s = std::chrono::milliseconds(timeout_ms);
    client_->set_connection_timeout(std::chrono::duration_cast<std::chrono::seconds>(s).count(),
                                    static_cast<time_t>((timeout_ms % 1000) * 1000));
    client_->set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(s).count(),
                              static_cast<time_t>((timeout_ms % 1000) * 1000));
  }

  nlohmann::json get(const std::string& api, const httplib::Params& params) {
    auto res = client_->Get(prefix_ + api, params, httplib::Headers{});
    if (!res) throw Error("prometheus " + url_ + ": " + httplib::to_string(res.error()));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(res->body);
    } catch (const std::exception&) {
      throw Error("prometheus " + url_ + api + ": HTTP " + std::to_string(res->status) + ", not the query API's JSON");
    }
    if (j.value("status", "") != "success")
      throw Error("prometheus " + url_ + api + ": " + j.value("error", "HTTP " + std::to_string(res->status)));
    return j["data"];
  }

  static Labels labels_of(const nlohmann::json& metric) {
    Labels labels;
    for (auto it = metric.begin(); it != metric.end(); ++it)
      if (it.key() != "__name__") labels[it.key()] = it.value();
    return labels;
  }

  Series instant(const std::string& query, int64_t time) {
    auto data = get("/api/v1/query", {{"query", query}, {"time", std::to_string(time)}});
    Series out;
    for (const auto& r : data["result"]) out[labels_of(r["metric"])] = std::stod(r["value"][1].get<std::string>());
    return out;
  }

  // Raw samples of a range selector evaluated at `time`.
  std::map<Labels, std::vector<std::pair<double, double>>> matrix(const std::string& query, int64_t time) {
    auto data = get("/api/v1/query", {{"query", query}, {"time", std::to_string(time)}});
    std::map<Labels, std::vector<std::pair<double, double>>> out;
    for (const auto& r : data["result"]) {
      auto& samples = out[labels_of(r["metric"])];
      for (const auto& p : r["values"]) samples.emplace_back(p[0].get<double>(), std::stod(p[1].get<std::string>()));
    }
    return out;
  }

 private:
  std::string url_, base_, prefix_;
  std::unique_ptr<httplib::Client> client_;
};

bool is_special(const Labels& l) {
  auto team = l.count("team") ? l.at("team") : "";
  return is_special_account(team) && (!l.count("pod") || l.at("pod").empty());
}

std::string get(const Labels& l, const char* k) {
  auto it = l.find(k);
  return it == l.end() ? "" : it->second;
}

std::string selector(const std::string& metric, const Labels& labels) {
  std::string s = metric + "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) s += ",";
    first = false;
    s += k + "=\"";
    for (char c : v) {
      if (c == '\\' || c == '"') s += '\\';
      if (c == '\n') {
        s += "\\n";
        continue;
      }
      s += c;
    }
    s += "\"";
  }
  return s + "}";
}

int64_t micros(double currency) { return std::llround(currency * 1e6); }

// A node, as Prometheus names its target.
std::string node_of(const Labels& l) {
  std::string instance = get(l, "instance");
  return instance.empty() ? "(unknown node)" : instance;
}

// What the fleet's counters tell about each node over the range.
struct NodeFacts {
  LedgerSince since;
  std::optional<double> first_sample, last_sample;
  bool history_unseen = false, reset_unknown = false;
};

class FleetCounters {
 public:
  FleetCounters(Prometheus& prom, int64_t from, int64_t to) : prom_(prom), from_(from), to_(to) {
    range_ = "[" + std::to_string(std::max<int64_t>(1, to - from)) + "s]";
    const std::string since = "gpuledger_ledger_first_window_timestamp_seconds" + range_;
    for (const auto& [l, v] : prom_.instant("min_over_time(" + since + ")", to_)) nodes_[node_of(l)].since.earliest = v;
    for (const auto& [l, v] : prom_.instant("max_over_time(" + since + ")", to_)) nodes_[node_of(l)].since.latest = v;
    // When each node was first and last seen in the range: timestamp() gives the
    // sample's own time, and steps well within the 5 min lookback miss none.
    const int64_t step = std::clamp<int64_t>((to - from) / 500, 1, 60);
    const std::string seen = "(timestamp(gpuledger_ledger_info))" + range_.substr(0, range_.size() - 1) + ":" +
                             std::to_string(step) + "s]";
    for (const auto& [l, v] : prom_.instant("min_over_time(" + seen + ")", to_)) nodes_[node_of(l)].first_sample = v;
    for (const auto& [l, v] : prom_.instant("max_over_time(" + seen + ")", to_)) nodes_[node_of(l)].last_sample = v;
  }

  // The exact growth of every series of `metric` (counter_increase()).
  Series increase(const std::string& metric) {
    std::map<Labels, CounterSummary> series;
    for (const auto& [l, v] : prom_.instant("last_over_time(" + metric + range_ + ")", to_)) series[l].last = v;
    for (const auto& [l, v] : prom_.instant("min_over_time(" + metric + range_ + ")", to_)) series[l].first = v;
    for (const auto& [l, v] : prom_.instant("resets(" + metric + range_ + ")", to_))
      series[l].resets = static_cast<int>(v);
    for (const auto& [l, v] : prom_.instant(metric, from_))
      if (series.count(l)) series[l].baseline = v;
    Series out;
    for (auto& [labels, s] : series) {
      if (s.resets > 0) s.samples = prom_.matrix(selector(metric, labels) + range_, to_)[labels];
      NodeFacts& node = nodes_[node_of(labels)];
      CounterIncrease inc = counter_increase(s, static_cast<double>(from_), node.since);
      node.history_unseen |= inc.history_unseen;
      node.reset_unknown |= inc.reset_unknown;
      out[labels] = inc.increase;
    }
    return out;
  }

  const std::map<std::string, NodeFacts>& nodes() const { return nodes_; }

 private:
  Prometheus& prom_;
  int64_t from_, to_;
  std::string range_;
  std::map<std::string, NodeFacts> nodes_;
};

void add_node_notes(Report& r, const std::map<std::string, NodeFacts>& nodes) {
  const double to = static_cast<double>(r.to);
  for (const auto& [node, f] : nodes) {
    const std::string name = valid_utf8(node);
    if (f.history_unseen)
      r.notes.push_back("Node " + name + ": Prometheus has no data for it from " + format_date_time(r.from) +
                        " until " +
                        (f.first_sample ? format_date_time(static_cast<int64_t>(*f.first_sample)) : "its first sample") +
                        "; that span is not billed here (its own ledger has it: gpuledger report --store on the node).");
    if (f.reset_unknown)
      r.notes.push_back("Node " + name +
                        ": its ledger counters went down (old windows deleted, then the agent restarted); what it "
                        "counted between the two samples around the drop is not billed here.");
    if (f.last_sample && *f.last_sample < to - 300 && *f.last_sample >= static_cast<double>(r.from))
      r.notes.push_back("Node " + name + ": last seen " + format_date_time(static_cast<int64_t>(*f.last_sample)) +
                        " (agent stopped or node removed); billed for what it counted until then.");
  }
  r.notes.push_back(
      "Fleet amounts are the growth of each node's ledger counters between Prometheus samples: they can differ "
      "from the nodes' own ledgers by the windows that closed within one scrape interval of the start or end of "
      "the range, per node.");
}

// Energy, carbon and allocated against used (share_seconds.h on the agents).
// Energy and carbon stay unknown for rows without such series; shares are not
// by GPU (a GPU's accounts together hold and use all of it), as locally.
void add_energy_and_shares(FleetCounters& counters, GroupBy by, std::map<std::string, Row>& rows) {
  for (const auto& [labels, v] : counters.increase("gpuledger_workload_gpu_energy_joules_total")) {
    auto& mj = rows[fleet_group_key(by, labels)].energy_millijoules;
    mj = mj.value_or(0) + std::llround(v * 1e3);  // the agents export integer mJ / 1e3
  }
  for (const auto& [labels, v] : counters.increase("gpuledger_ledger_carbon_grams_total")) {
    auto& grams = rows[fleet_group_key(by, labels)].carbon_grams;
    grams = grams.value_or(0) + v;
  }
  if (by == GroupBy::kGpu) return;
  const std::pair<const char*, double Row::*> kShares[] = {
      {"gpuledger_ledger_share_gpu_seconds_total", &Row::share_hours},
      {"gpuledger_ledger_allocated_share_gpu_seconds_total", &Row::allocated_hours},
      {"gpuledger_ledger_allocated_share_unknown_gpu_seconds_total", &Row::allocated_unknown_hours},
      {"gpuledger_ledger_energy_share_gpu_seconds_total", &Row::energy_share_hours}};
  for (const auto& [metric, field] : kShares)
    for (const auto& [labels, v] : counters.increase(metric)) rows[fleet_group_key(by, labels)].*field += v / 3600.0;
  for (const auto& [labels, v] : counters.increase("gpuledger_ledger_used_share_gpu_seconds_total")) {
    const std::string resource = get(labels, "resource");
    double Row::*field = resource == "activity" ? &Row::used_hours
                         : resource == "vram"   ? &Row::vram_used_hours
                         : resource == "energy" ? &Row::energy_used_hours
                                                : nullptr;
    if (field) rows[fleet_group_key(by, labels)].*field += v / 3600.0;
  }
}

}  // namespace

std::string fleet_group_key(GroupBy by, const Labels& l) {
  if (by == GroupBy::kGpu) return get(l, "UUID");
  if (is_special(l)) return get(l, "team");
  switch (by) {
    case GroupBy::kTeam: return get(l, "team").empty() ? "(no team)" : get(l, "team");
    case GroupBy::kNamespace: return get(l, "namespace").empty() ? "(no namespace)" : get(l, "namespace");
    case GroupBy::kPod: return get(l, "pod").empty() ? "(no pod)" : get(l, "namespace") + "/" + get(l, "pod");
    default: {
      // A workload is a node's: two nodes' unnamed workloads stay apart.
      std::string k = get(l, "namespace") + "/" + get(l, "pod") + "/" + get(l, "container");
      return node_of(l) + " " + (k == "//" ? "(unnamed)" : k);
    }
  }
}

Report fleet_report(const std::string& url, int64_t from, int64_t to, GroupBy by, unsigned timeout_ms) {
  Prometheus prom(url, timeout_ms);
  Report r;
  r.from = from;
  r.to = to;
  r.by = by;
  r.source = "fleet";
  const std::string range = "[" + std::to_string(std::max<int64_t>(1, to - from)) + "s]";

  // One currency, or a clear refusal naming who prices in what.
  std::map<std::string, std::set<std::string>> nodes_by_currency;
  for (const auto& [labels, v] : prom.instant("last_over_time(gpuledger_ledger_info" + range + ")", to))
    nodes_by_currency[get(labels, "currency")].insert(node_of(labels));
  if (nodes_by_currency.size() > 1) {
    std::string detail;
    for (const auto& [currency, nodes] : nodes_by_currency) {
      detail += (detail.empty() ? "" : "; ") + valid_utf8(currency) + ":";
      for (const auto& n : nodes) detail += " " + valid_utf8(n);
    }
    throw Error("the fleet's agents price in different currencies (" + detail +
                "); give them one price list, or report each currency's nodes from a Prometheus that scrapes only "
                "them");
  }
  if (!nodes_by_currency.empty()) r.currency = nodes_by_currency.begin()->first;

  FleetCounters counters(prom, from, to);
  std::map<std::string, Row> rows;
  std::map<std::string, std::map<std::string, Row>> pods_by_team;  // the per-team sections
  auto pod_of = [&](const Labels& l) -> Row& {
    return pods_by_team[fleet_group_key(GroupBy::kTeam, l)][fleet_group_key(GroupBy::kPod, l)];
  };
  for (const auto& [labels, v] : counters.increase("gpuledger_cost_total")) {
    const std::string kind = get(labels, "kind");
    const ledger::ChargeKind k = kind == "busy"     ? ledger::ChargeKind::kBusy
                                 : kind == "memory" ? ledger::ChargeKind::kMemory
                                                    : ledger::ChargeKind::kIdle;
    rows[fleet_group_key(by, labels)].add_cost(k, micros(v));
    pod_of(labels).add_cost(k, micros(v));
  }
  for (const auto& [labels, v] : counters.increase("gpuledger_held_gpu_seconds_total")) {
    rows[fleet_group_key(by, labels)].gpu_hours_held += v / 3600.0;
    pod_of(labels).gpu_hours_held += v / 3600.0;
  }
  for (const auto& [labels, v] : counters.increase("gpuledger_busy_gpu_seconds_total")) {
    rows[fleet_group_key(by, labels)].gpu_hours_busy += v / 3600.0;
    pod_of(labels).gpu_hours_busy += v / 3600.0;
  }
  r.teams = team_sections(pods_by_team);
  for (const auto& [labels, v] : counters.increase("gpuledger_ledger_vram_byte_seconds_total"))
    rows[fleet_group_key(by, labels)].vram_gib_hours += v / (1024.0 * 1024.0 * 1024.0) / 3600.0;
  for (const auto& [labels, v] : counters.increase("gpuledger_ledger_launches_total"))
    rows[fleet_group_key(by, labels)].launches += static_cast<uint64_t>(std::llround(v));
  // Efficiency: per row, the ratio's weighted sum over the GPU-seconds that had a value.
  std::map<std::string, std::array<double, 4>> weighted, known;
  auto ratio_index = [](const Labels& l) {
    const std::string ratio = get(l, "ratio");
    return ratio == "sm_active" ? 0 : ratio == "sm_occupancy" ? 1 : ratio == "tensor_active" ? 2
                                      : ratio == "dram_active"   ? 3 : -1;
  };
  for (const auto& [labels, v] : counters.increase("gpuledger_ledger_efficiency_weighted_gpu_seconds_total"))
    if (int i = ratio_index(labels); i >= 0) weighted[fleet_group_key(by, labels)][i] += v;
  for (const auto& [labels, v] : counters.increase("gpuledger_ledger_efficiency_known_gpu_seconds_total"))
    if (int i = ratio_index(labels); i >= 0) known[fleet_group_key(by, labels)][i] += v;
  add_energy_and_shares(counters, by, rows);
  for (auto& [key, row] : rows) {
    row.key = key;
    std::optional<double> ratios[4];
    for (int i = 0; i < 4; ++i)
      if (known[key][i] > 0) ratios[i] = weighted[key][i] / known[key][i];
    row.efficiency = {ratios[0], ratios[1], ratios[2], ratios[3]};
    row.efficiency_hours = row.gpu_hours_held;
    r.rows.push_back(row);
  }

  // Cost over time by team: differences between evaluations a bucket apart, per series.
  const int64_t span = std::max<int64_t>(1, to - from);
  r.bucket_seconds = chart_bucket_seconds(span, 60);  // Prometheus evaluates at least a minute apart
  auto data = prom.get("/api/v1/query_range", {{"query", "gpuledger_cost_total"},
                                               {"start", std::to_string(from)},
                                               {"end", std::to_string(to)},
                                               {"step", std::to_string(r.bucket_seconds)}});
  std::map<int64_t, std::map<std::string, int64_t>> series;
  for (const auto& s : data["result"]) {
    const std::string team = fleet_group_key(GroupBy::kTeam, Prometheus::labels_of(s["metric"]));
    std::optional<double> prev;
    for (const auto& p : s["values"]) {
      int64_t t = static_cast<int64_t>(p[0].get<double>());
      double v = std::stod(p[1].get<std::string>());
      double d = !prev ? 0 : (v >= *prev ? v - *prev : 0);
      if (prev && d > 0) series[t - r.bucket_seconds][team] += micros(d);
      prev = v;
    }
  }
  r.cost_by_team_over_time.assign(series.begin(), series.end());
  add_node_notes(r, counters.nodes());
  finish_report(r);
  return r;
}

}  // namespace gpuledger::report
