#include "report/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/prices.h"

namespace gpuledger::report {

using ledger::AccountRecord;
using ledger::ChargeKind;
using ledger::WindowRecord;

GroupBy parse_group_by(const std::string& t) {
  if (t == "team") return GroupBy::kTeam;
  if (t == "namespace") return GroupBy::kNamespace;
  if (t == "pod") return GroupBy::kPod;
  if (t == "workload") return GroupBy::kWorkload;
  if (t == "gpu") return GroupBy::kGpu;
  throw Error("--by: unknown grouping '" + t + "' (team, namespace, pod, workload or gpu)");
}

Format parse_format(const std::string& t) {
  if (t == "table") return Format::kTable;
  if (t == "csv") return Format::kCsv;
  if (t == "json") return Format::kJson;
  if (t == "html") return Format::kHtml;
  throw Error("--format: unknown format '" + t + "' (table, csv, json or html)");
}

std::string to_string(GroupBy by) {
  switch (by) {
    case GroupBy::kTeam: return "team";
    case GroupBy::kNamespace: return "namespace";
    case GroupBy::kPod: return "pod";
    case GroupBy::kWorkload: return "workload";
    case GroupBy::kGpu: return "gpu";
  }
  return "?";
}

int64_t parse_time(const std::string& text, int64_t now) {
  auto bad = [&]() -> Error {
    return Error("time '" + text + "': expected now, -<n>s|m|h|d, RFC 3339 (2026-11-29T10:00:00Z) or Unix seconds");
  };
  if (text == "now") return now;
  if (text.size() >= 3 && text[0] == '-' && std::isdigit(static_cast<unsigned char>(text[1]))) {
    size_t pos = 0;
    long long n = 0;
    try {
      n = std::stoll(text.substr(1), &pos);
    } catch (...) {
      throw bad();
    }
    if (pos + 2 != text.size()) throw bad();
    char unit = text.back();
    int64_t mult = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
    if (!mult) throw bad();
    return now - n * mult;
  }
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::stoll(text);
  std::tm tm{};
  int y, mo, d, h, mi, s;
  char t;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &t, &h, &mi, &s, &consumed) != 7 ||
      (t != 'T' && t != 't' && t != ' '))
    throw bad();
  std::string rest = text.substr(consumed);
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    rest = rest.substr(i);
  }
  int64_t offset = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(rest.c_str() + 1, "%2d:%2d", &oh, &om) != 2) throw bad();
    offset = (oh * 3600 + om * 60) * (rest[0] == '+' ? 1 : -1);
  } else {
    throw bad();
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<int64_t>(timegm(&tm)) - offset;
}

std::string format_rfc3339(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

AccountRecord named(const std::string& account) {
  AccountRecord a;
  a.account = account;
  return a;
}

bool is_special(const std::string& account) {
  return account == ledger::kIdleAccount || account == ledger::kUnallocatedAccount;
}

struct Acc {
  Row row;
  // Efficiency: per (window, group) sums, then averaged over windows.
  std::map<size_t, ledger::Efficiency> per_window;
};

void add_opt(std::optional<double>& to, const std::optional<double>& v) {
  if (v) to = to.value_or(0) + *v;
}

}  // namespace

std::string group_key(GroupBy by, const WindowRecord& w, const AccountRecord& a) {
  if (by == GroupBy::kGpu) return w.slot.uuid;
  if (is_special(a.account)) return a.account;
  switch (by) {
    case GroupBy::kTeam: return a.labels.team.empty() ? "(no team)" : a.labels.team;
    case GroupBy::kNamespace: return a.labels.namespace_name.empty() ? "(no namespace)" : a.labels.namespace_name;
    case GroupBy::kPod:
      return a.labels.pod.empty() ? a.account : a.labels.namespace_name + "/" + a.labels.pod;
    default: return a.account;
  }
}

Report build_report(const std::vector<WindowRecord>& windows, int64_t from, int64_t to, GroupBy by) {
  Report r;
  r.from = from;
  r.to = to;
  r.by = by;
  std::map<std::string, Acc> groups;
  int64_t min_window = 0;
  std::set<std::string> currencies;
  for (size_t wi = 0; wi < windows.size(); ++wi) {
    const WindowRecord& w = windows[wi];
    currencies.insert(w.currency);
    const double len = static_cast<double>(w.end - w.start);
    if (min_window == 0 || (w.end - w.start) < min_window) min_window = w.end - w.start;
    std::map<std::string, const AccountRecord*> records;
    for (const auto& a : w.accounts) records[a.account] = &a;
    std::vector<AccountRecord> synthetic;  // charged accounts without a record
    synthetic.reserve(w.charges.size());
    for (const auto& c : w.charges)
      if (!records.count(c.account)) {
        synthetic.push_back(named(c.account));
        records[c.account] = &synthetic.back();
      }
    for (const auto& [name, a] : records) {
      Acc& g = groups[group_key(by, w, *a)];
      g.row.gpu_hours_held += a->held_share * len * w.gpu_fraction / 3600.0;
      g.row.gpu_hours_busy += a->gpu_busy_seconds * w.gpu_fraction / 3600.0;
      g.row.vram_gib_hours += a->vram_byte_seconds / (1024.0 * 1024.0 * 1024.0) / 3600.0;
      g.row.launches += a->launches;
      if (by != GroupBy::kGpu) {
        auto& e = g.per_window[wi];
        add_opt(e.sm_active, a->efficiency.sm_active);
        add_opt(e.sm_occupancy, a->efficiency.sm_occupancy);
        add_opt(e.tensor_active, a->efficiency.tensor_active);
        add_opt(e.dram_active, a->efficiency.dram_active);
      } else {
        g.per_window[wi] = w.device;
      }
    }
    for (const auto& c : w.charges) {
      Acc& g = groups[group_key(by, w, *records.at(c.account))];
      (c.kind == ChargeKind::kBusy ? g.row.cost_busy_micros : g.row.cost_idle_micros) += c.micros;
    }
  }
  if (currencies.size() > 1) throw Error("the range mixes currencies; report a range with one currency");
  if (!currencies.empty()) r.currency = *currencies.begin();
  for (auto& [key, g] : groups) {
    g.row.key = key;
    auto average = [&](std::optional<double> ledger::Efficiency::*field) -> std::optional<double> {
      double num = 0, den = 0;
      for (const auto& [wi, e] : g.per_window) {
        if (!(e.*field)) continue;
        double wt = static_cast<double>(windows[wi].end - windows[wi].start) * windows[wi].gpu_fraction;
        num += *(e.*field) * wt;
        den += wt;
      }
      return den > 0 ? std::optional<double>(num / den) : std::nullopt;
    };
    g.row.efficiency = {average(&ledger::Efficiency::sm_active), average(&ledger::Efficiency::sm_occupancy),
                        average(&ledger::Efficiency::tensor_active), average(&ledger::Efficiency::dram_active)};
    r.rows.push_back(g.row);
  }
  // Cost over time by team.
  int64_t span = std::max<int64_t>(1, to - from);
  int64_t bucket = std::max<int64_t>(min_window > 0 ? min_window : 60, (span + 47) / 48);
  if (min_window > 0) bucket = (bucket + min_window - 1) / min_window * min_window;
  r.bucket_seconds = bucket;
  std::map<int64_t, std::map<std::string, int64_t>> series;
  for (const auto& w : windows) {
    int64_t b = from + (w.start - from) / bucket * bucket;
    std::map<std::string, const AccountRecord*> records;
    for (const auto& a : w.accounts) records[a.account] = &a;
    for (const auto& c : w.charges) {
      AccountRecord fallback = named(c.account);
      auto it = records.find(c.account);
      series[b][group_key(GroupBy::kTeam, w, it == records.end() ? fallback : *it->second)] += c.micros;
    }
  }
  r.cost_by_team_over_time.assign(series.begin(), series.end());
  finish_report(r);
  return r;
}

void finish_report(Report& r) {
  std::sort(r.rows.begin(), r.rows.end(), [](const Row& a, const Row& b) {
    if (a.cost_total_micros() != b.cost_total_micros()) return a.cost_total_micros() > b.cost_total_micros();
    return a.key < b.key;
  });
  r.total = Row();
  r.total.key = "TOTAL";
  for (const auto& row : r.rows) {
    r.total.gpu_hours_held += row.gpu_hours_held;
    r.total.gpu_hours_busy += row.gpu_hours_busy;
    r.total.cost_busy_micros += row.cost_busy_micros;
    r.total.cost_idle_micros += row.cost_idle_micros;
    r.total.vram_gib_hours += row.vram_gib_hours;
    r.total.launches += row.launches;
  }
  r.top_wasters.clear();
  for (const auto& row : r.rows)
    if (row.cost_idle_micros > 0 && !is_special(row.key)) r.top_wasters.push_back(row);
  std::stable_sort(r.top_wasters.begin(), r.top_wasters.end(),
                   [](const Row& a, const Row& b) { return a.cost_idle_micros > b.cost_idle_micros; });
  if (r.top_wasters.size() > 5) r.top_wasters.resize(5);
}

// ---------------------------------------------------------------- rendering

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
std::string money(int64_t micros) { return ledger::format_micros(micros); }
std::string pct(const std::optional<double>& v) { return v ? fixed(*v * 100.0, 1) + "%" : "unknown"; }
std::string ratio(const std::optional<double>& v) { return v ? fixed(*v, 4) : ""; }

const std::vector<std::string> kHeaders = {"gpu_hours_held", "gpu_hours_busy", "cost_busy",   "cost_idle",
                                           "cost_total",     "sm_active",      "sm_occupancy", "tensor_active",
                                           "dram_active",    "vram_gib_hours", "launches"};

std::vector<std::string> table_cells(const Row& row) {
  return {row.key,
          fixed(row.gpu_hours_held, 4),
          fixed(row.gpu_hours_busy, 4),
          money(row.cost_busy_micros),
          money(row.cost_idle_micros),
          money(row.cost_total_micros()),
          pct(row.efficiency.sm_active),
          pct(row.efficiency.sm_occupancy),
          pct(row.efficiency.tensor_active),
          pct(row.efficiency.dram_active),
          fixed(row.vram_gib_hours, 4),
          std::to_string(row.launches)};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json row_json(const Row& row) {
  return {{"key", row.key},
          {"gpu_hours_held", row.gpu_hours_held},
          {"gpu_hours_busy", row.gpu_hours_busy},
          {"cost_busy", money(row.cost_busy_micros)},
          {"cost_idle", money(row.cost_idle_micros)},
          {"cost_total", money(row.cost_total_micros())},
          {"cost_busy_micros", row.cost_busy_micros},
          {"cost_idle_micros", row.cost_idle_micros},
          {"cost_total_micros", row.cost_total_micros()},
          {"sm_active", opt_json(row.efficiency.sm_active)},
          {"sm_occupancy", opt_json(row.efficiency.sm_occupancy)},
          {"tensor_active", opt_json(row.efficiency.tensor_active)},
          {"dram_active", opt_json(row.efficiency.dram_active)},
          {"vram_gib_hours", row.vram_gib_hours},
          {"launches", row.launches}};
}

}  // namespace

std::string render_table(const Report& r) {
  std::vector<std::string> head = {to_string(r.by)};
  for (const auto& h : kHeaders) head.push_back(h);
  std::vector<std::vector<std::string>> lines = {head};
  for (const auto& row : r.rows) lines.push_back(table_cells(row));
  lines.push_back(table_cells(r.total));
  std::vector<size_t> width(head.size(), 0);
  for (const auto& l : lines)
    for (size_t i = 0; i < l.size(); ++i) width[i] = std::max(width[i], l[i].size());
  std::ostringstream out;
  out << "GPU chargeback " << format_rfc3339(r.from) << " .. " << format_rfc3339(r.to) << " by " << to_string(r.by)
      << " (" << r.currency << ", " << r.source << ")\n\n";
  auto emit = [&](const std::vector<std::string>& l) {
    std::string line;
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) line += "  ";
      if (i == 0)
        line += l[i] + std::string(width[i] - l[i].size(), ' ');
      else
        line += std::string(width[i] - l[i].size(), ' ') + l[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 == lines.size()) {
      size_t total_width = 0;
      for (size_t w : width) total_width += w;
      out << std::string(total_width + 2 * (width.size() - 1), '-') << "\n";
    }
    emit(lines[i]);
  }
  out << "\nTop wasters (idle cost)\n";
  if (r.top_wasters.empty()) out << "  none\n";
  size_t kw = 0;
  for (const auto& w : r.top_wasters) kw = std::max(kw, w.key.size());
  for (size_t i = 0; i < r.top_wasters.size(); ++i) {
    const Row& w = r.top_wasters[i];
    double share = w.cost_total_micros() ? 100.0 * w.cost_idle_micros / w.cost_total_micros() : 0;
    out << "  " << (i + 1) << ". " << w.key << std::string(kw - w.key.size(), ' ') << "  " << money(w.cost_idle_micros)
        << " " << r.currency << " idle (" << fixed(share, 1) << "% of its cost)\n";
  }
  return out.str();
}

std::string render_csv(const Report& r) {
  std::string out = to_string(r.by);
  for (const auto& h : kHeaders) out += "," + h;
  out += "\r\n";
  auto emit = [&](const Row& row) {
    std::vector<std::string> cells = {row.key,
                                      fixed(row.gpu_hours_held, 6),
                                      fixed(row.gpu_hours_busy, 6),
                                      money(row.cost_busy_micros),
                                      money(row.cost_idle_micros),
                                      money(row.cost_total_micros()),
                                      ratio(row.efficiency.sm_active),
                                      ratio(row.efficiency.sm_occupancy),
                                      ratio(row.efficiency.tensor_active),
                                      ratio(row.efficiency.dram_active),
                                      fixed(row.vram_gib_hours, 6),
                                      std::to_string(row.launches)};
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    out += "\r\n";
  };
  for (const auto& row : r.rows) emit(row);
  return out;
}

std::string render_json(const Report& r) {
  nlohmann::json j;
  j["from"] = format_rfc3339(r.from);
  j["to"] = format_rfc3339(r.to);
  j["by"] = to_string(r.by);
  j["currency"] = r.currency;
  j["source"] = r.source;
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) j["rows"].push_back(row_json(row));
  j["total"] = row_json(r.total);
  j["top_wasters"] = nlohmann::json::array();
  for (const auto& row : r.top_wasters)
    j["top_wasters"].push_back(
        {{"key", row.key}, {"cost_idle", money(row.cost_idle_micros)}, {"cost_idle_micros", row.cost_idle_micros}});
  j["bucket_seconds"] = r.bucket_seconds;
  j["cost_by_team_over_time"] = nlohmann::json::array();
  for (const auto& [start, teams] : r.cost_by_team_over_time)
    j["cost_by_team_over_time"].push_back({{"start", format_rfc3339(start)}, {"cost_micros", teams}});
  // Invalid bytes in a key become U+FFFD instead of a type_error (and an abort).
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string color(size_t i) { return kPalette[i % (sizeof kPalette / sizeof kPalette[0])]; }

std::string svg_cost_over_time(const Report& r) {
  const double W = 760, H = 300, L = 70, B = 40, T = 20, R = 160;
  std::vector<std::string> teams;
  {
    std::set<std::string> s;
    for (const auto& [b, m] : r.cost_by_team_over_time)
      for (const auto& [t, v] : m) s.insert(t);
    teams.assign(s.begin(), s.end());
  }
  int64_t max_total = 1;
  for (const auto& [b, m] : r.cost_by_team_over_time) {
    int64_t sum = 0;
    for (const auto& [t, v] : m) sum += v;
    max_total = std::max(max_total, sum);
  }
  size_t n = std::max<size_t>(1, static_cast<size_t>((r.to - r.from + r.bucket_seconds - 1) /
                                                     std::max<int64_t>(1, r.bucket_seconds)));
  double bw = (W - L - R) / static_cast<double>(n);
  std::ostringstream s;
  s << "<svg id=\"chart-cost-over-time\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"Cost over time by team\">";
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"#333\"/><line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B
    << "\" stroke=\"#333\"/>";
  s << "<text x=\"" << L - 6 << "\" y=\"" << T + 4 << "\" text-anchor=\"end\" font-size=\"11\">"
    << money(max_total) << "</text><text x=\"" << L - 6 << "\" y=\"" << H - B << "\" text-anchor=\"end\" font-size=\"11\">0</text>";
  s << "<text x=\"" << L << "\" y=\"" << H - 10 << "\" font-size=\"11\">" << format_rfc3339(r.from)
    << "</text><text x=\"" << W - R << "\" y=\"" << H - 10 << "\" text-anchor=\"end\" font-size=\"11\">"
    << format_rfc3339(r.to) << "</text>";
  for (const auto& [b, m] : r.cost_by_team_over_time) {
    double x = L + static_cast<double>((b - r.from) / std::max<int64_t>(1, r.bucket_seconds)) * bw;
    double y = H - B;
    for (size_t ti = 0; ti < teams.size(); ++ti) {
      auto it = m.find(teams[ti]);
      if (it == m.end() || it->second == 0) continue;
      double h = (H - B - T) * static_cast<double>(it->second) / static_cast<double>(max_total);
      y -= h;
      s << "<rect class=\"bar\" x=\"" << fixed(x + 1, 2) << "\" y=\"" << fixed(y, 2) << "\" width=\""
        << fixed(std::max(1.0, bw - 2), 2) << "\" height=\"" << fixed(h, 2) << "\" fill=\"" << color(ti)
        << "\"><title>" << html_escape(teams[ti]) << " " << format_rfc3339(b) << ": " << money(it->second) << " "
        << html_escape(r.currency) << "</title></rect>";
    }
  }
  for (size_t ti = 0; ti < teams.size(); ++ti) {
    double y = T + 16.0 * static_cast<double>(ti);
    s << "<rect x=\"" << W - R + 12 << "\" y=\"" << y << "\" width=\"10\" height=\"10\" fill=\"" << color(ti)
      << "\"/><text x=\"" << W - R + 28 << "\" y=\"" << y + 9 << "\" font-size=\"11\">" << html_escape(teams[ti])
      << "</text>";
  }
  s << "</svg>";
  return s.str();
}

std::string svg_cost_vs_efficiency(const Report& r) {
  const double W = 760, H = 300, L = 70, B = 40, T = 20, R = 30;
  int64_t max_cost = 1;
  for (const auto& row : r.rows) max_cost = std::max(max_cost, row.cost_total_micros());
  std::ostringstream s;
  s << "<svg id=\"chart-cost-vs-efficiency\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\""
    << H << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"Cost against SM active\">";
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"#333\"/><line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B
    << "\" stroke=\"#333\"/>";
  s << "<text x=\"" << (W - R + L) / 2 << "\" y=\"" << H - 8
    << "\" text-anchor=\"middle\" font-size=\"11\">SM active (0-100%)</text>";
  s << "<text x=\"" << L - 6 << "\" y=\"" << T + 4 << "\" text-anchor=\"end\" font-size=\"11\">" << money(max_cost)
    << "</text>";
  size_t i = 0;
  for (const auto& row : r.rows) {
    ++i;
    if (!row.efficiency.sm_active) continue;
    double x = L + (W - L - R) * std::clamp(*row.efficiency.sm_active, 0.0, 1.0);
    double y = H - B - (H - B - T) * static_cast<double>(row.cost_total_micros()) / static_cast<double>(max_cost);
    s << "<circle class=\"point\" cx=\"" << fixed(x, 2) << "\" cy=\"" << fixed(y, 2) << "\" r=\"6\" fill=\""
      << color(i - 1) << "\"><title>" << html_escape(row.key) << ": " << money(row.cost_total_micros()) << " "
      << html_escape(r.currency) << ", SM active " << pct(row.efficiency.sm_active) << "</title></circle>";
    s << "<text x=\"" << fixed(x + 8, 2) << "\" y=\"" << fixed(y + 4, 2) << "\" font-size=\"11\">"
      << html_escape(row.key) << "</text>";
  }
  s << "</svg>";
  return s.str();
}

std::string svg_idle_share(const Report& r) {
  const double W = 760, L = 200, R = 80, rowh = 22;
  double H = 20 + rowh * static_cast<double>(std::max<size_t>(1, r.rows.size()));
  std::ostringstream s;
  s << "<svg id=\"chart-idle-share\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"Idle share of cost\">";
  double y = 10;
  for (const auto& row : r.rows) {
    double total = static_cast<double>(row.cost_total_micros());
    double share = total > 0 ? static_cast<double>(row.cost_idle_micros) / total : 0;
    double bw = (W - L - R);
    s << "<text x=\"" << L - 8 << "\" y=\"" << y + 14 << "\" text-anchor=\"end\" font-size=\"11\">"
      << html_escape(row.key) << "</text>";
    s << "<rect x=\"" << L << "\" y=\"" << y + 3 << "\" width=\"" << bw << "\" height=\"" << rowh - 6
      << "\" fill=\"#e8e8e8\"/>";
    s << "<rect class=\"idle\" x=\"" << L << "\" y=\"" << y + 3 << "\" width=\"" << fixed(bw * share, 2)
      << "\" height=\"" << rowh - 6 << "\" fill=\"#e15759\"><title>" << html_escape(row.key) << ": idle "
      << fixed(share * 100, 1) << "%</title></rect>";
    s << "<text x=\"" << W - R + 6 << "\" y=\"" << y + 14 << "\" font-size=\"11\">" << fixed(share * 100, 1)
      << "%</text>";
    y += rowh;
  }
  s << "</svg>";
  return s.str();
}

}  // namespace

std::string render_html(const Report& r) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<title>gpuledger chargeback " << format_rfc3339(r.from) << " .. " << format_rfc3339(r.to) << "</title>"
    << "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:13px}"
    << "th,td{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:"
    << "left}tr.total td{font-weight:bold;border-top:2px solid #333}h2{margin-top:32px}.unknown{color:#999}"
    << "</style></head><body>\n";
  h << "<h1>GPU chargeback</h1><p id=\"range\">" << format_rfc3339(r.from) << " .. " << format_rfc3339(r.to) << " by "
    << to_string(r.by) << ", amounts in " << html_escape(r.currency) << " (" << html_escape(r.source) << ")</p>\n";
  h << "<table id=\"report\"><thead><tr><th>" << to_string(r.by) << "</th>";
  for (const auto& hd : kHeaders) h << "<th>" << hd << "</th>";
  h << "</tr></thead><tbody>\n";
  auto emit = [&](const Row& row, bool total) {
    h << (total ? "<tr class=\"total\">" : "<tr>");
    for (const auto& c : table_cells(row))
      h << (c == "unknown" ? "<td class=\"unknown\">" : "<td>") << html_escape(c) << "</td>";
    h << "</tr>\n";
  };
  for (const auto& row : r.rows) emit(row, false);
  emit(r.total, true);
  h << "</tbody></table>\n";
  h << "<h2>Top wasters (idle cost)</h2><ol id=\"top-wasters\">";
  for (const auto& w : r.top_wasters)
    h << "<li>" << html_escape(w.key) << ": " << money(w.cost_idle_micros) << " " << html_escape(r.currency)
      << "</li>";
  h << "</ol>\n";
  h << "<h2>Cost over time by team</h2>\n" << svg_cost_over_time(r) << "\n";
  h << "<h2>Cost against efficiency (SM active)</h2>\n" << svg_cost_vs_efficiency(r) << "\n";
  h << "<h2>Idle share of cost</h2>\n" << svg_idle_share(r) << "\n";
  h << "</body></html>\n";
  return h.str();
}

std::string render(const Report& r, Format f) {
  // Group keys are tenant-chosen names (and a fleet report's come from any
  // Prometheus): every format leaves as valid UTF-8.
  switch (f) {
    case Format::kTable: return valid_utf8(render_table(r));
    case Format::kCsv: return valid_utf8(render_csv(r));
    case Format::kJson: return render_json(r);
    case Format::kHtml: return valid_utf8(render_html(r));
  }
  return "";
}

}  // namespace gpuledger::report
