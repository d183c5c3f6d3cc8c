#include "report/fleet.h"

#include <httplib.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "ledger/window_split.h"

namespace gpuledger::report {

namespace {

using Series = std::map<std::map<std::string, std::string>, double>;

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

  Series instant(const std::string& query, int64_t time) {
    auto data = get("/api/v1/query", {{"query", query}, {"time", std::to_string(time)}});
    Series out;
    for (const auto& r : data["result"]) {
      std::map<std::string, std::string> labels;
      for (auto it = r["metric"].begin(); it != r["metric"].end(); ++it) labels[it.key()] = it.value();
      out[labels] = std::stod(r["value"][1].get<std::string>());
    }
    return out;
  }

 private:
  std::string url_, base_, prefix_;
  std::unique_ptr<httplib::Client> client_;
};

bool is_special(const std::map<std::string, std::string>& l) {
  auto team = l.count("team") ? l.at("team") : "";
  return (team == ledger::kIdleAccount || team == ledger::kUnallocatedAccount) && (!l.count("pod") || l.at("pod").empty());
}

std::string get(const std::map<std::string, std::string>& l, const char* k) {
  auto it = l.find(k);
  return it == l.end() ? "" : it->second;
}

// to - from, per series; reset: the value at to.
Series difference(const Series& at_to, const Series& at_from) {
  Series out;
  for (const auto& [labels, v] : at_to) {
    auto it = at_from.find(labels);
    double before = it == at_from.end() ? 0 : it->second;
    out[labels] = v >= before ? v - before : v;
  }
  return out;
}

int64_t micros(double currency) { return std::llround(currency * 1e6); }

}  // namespace

std::string fleet_group_key(GroupBy by, const std::map<std::string, std::string>& l) {
  if (by == GroupBy::kGpu) return get(l, "UUID");
  if (is_special(l)) return get(l, "team");
  switch (by) {
    case GroupBy::kTeam: return get(l, "team").empty() ? "(no team)" : get(l, "team");
    case GroupBy::kNamespace: return get(l, "namespace").empty() ? "(no namespace)" : get(l, "namespace");
    case GroupBy::kPod: return get(l, "pod").empty() ? "(no pod)" : get(l, "namespace") + "/" + get(l, "pod");
    default: {
      std::string k = get(l, "namespace") + "/" + get(l, "pod") + "/" + get(l, "container");
      return k == "//" ? "(unnamed)" : k;
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
  const std::string account = "namespace,pod,container,team,UUID";
  auto diff = [&](const std::string& query) { return difference(prom.instant(query, to), prom.instant(query, from)); };

  std::set<std::string> currencies;
  for (const auto& [labels, v] : prom.instant("max by (currency) (gpuledger_ledger_info)", to))
    currencies.insert(get(labels, "currency"));
  if (currencies.size() > 1) throw Error("the fleet's agents price in different currencies");
  if (!currencies.empty()) r.currency = *currencies.begin();

  std::map<std::string, Row> rows;
  for (const auto& [labels, v] : diff("sum by (" + account + ",kind) (gpuledger_cost_total)")) {
    Row& row = rows[fleet_group_key(by, labels)];
    (get(labels, "kind") == "busy" ? row.cost_busy_micros : row.cost_idle_micros) += micros(v);
  }
  for (const auto& [labels, v] : diff("sum by (" + account + ") (gpuledger_held_gpu_seconds_total)"))
    rows[fleet_group_key(by, labels)].gpu_hours_held += v / 3600.0;
  for (const auto& [labels, v] : diff("sum by (" + account + ") (gpuledger_busy_gpu_seconds_total)"))
    rows[fleet_group_key(by, labels)].gpu_hours_busy += v / 3600.0;
  for (auto& [key, row] : rows) {
    row.key = key;
    r.rows.push_back(row);
  }

  // Cost over time by team: differences between evaluations a bucket apart.
  const int64_t span = std::max<int64_t>(1, to - from);
  r.bucket_seconds = std::max<int64_t>(60, (span + 47) / 48);
  auto data = prom.get("/api/v1/query_range", {{"query", "sum by (" + account + ") (gpuledger_cost_total)"},
                                               {"start", std::to_string(from)},
                                               {"end", std::to_string(to)},
                                               {"step", std::to_string(r.bucket_seconds)}});
  std::map<int64_t, std::map<std::string, int64_t>> series;
  for (const auto& s : data["result"]) {
    std::map<std::string, std::string> labels;
    for (auto it = s["metric"].begin(); it != s["metric"].end(); ++it) labels[it.key()] = it.value();
    const std::string team = fleet_group_key(GroupBy::kTeam, labels);
    std::optional<double> prev;
    for (const auto& p : s["values"]) {
      int64_t t = static_cast<int64_t>(p[0].get<double>());
      double v = std::stod(p[1].get<std::string>());
      double d = !prev ? 0 : (v >= *prev ? v - *prev : v);
      if (prev && d > 0) series[t - r.bucket_seconds][team] += micros(d);
      prev = v;
    }
  }
  r.cost_by_team_over_time.assign(series.begin(), series.end());
  finish_report(r);
  return r;
}

}  // namespace gpuledger::report
