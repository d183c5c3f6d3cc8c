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
#include "report/report_text.h"
#include "report/rightsizing_render.h"
#include "report/split_sources.h"

namespace gpuledger::report {


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

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (UTC; no time zone involved).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

std::pair<int64_t, int64_t> parse_month(const std::string& text) {
  int y = 0, m = 0, consumed = 0;
  if (text.size() != 7 || std::sscanf(text.c_str(), "%4d-%2d%n", &y, &m, &consumed) != 2 || consumed != 7 || m < 1 ||
      m > 12 || text[4] != '-')
    throw Error("--month '" + text + "': expected a year and month, e.g. 2026-11");
  const int64_t start = days_from_civil(y, m, 1) * 86400;
  const int64_t end = m == 12 ? days_from_civil(y + 1, 1, 1) * 86400 : days_from_civil(y, m + 1, 1) * 86400;
  return {start, end};
}

int64_t parse_time(const std::string& text, int64_t now) {
  auto bad = [&]() -> Error {
    return Error("time '" + text +
                 "': expected now, -<n>s|m|h|d, a date (2026-11-01), RFC 3339 (2026-11-29T10:00:00Z) or Unix seconds");
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
  {
    int y, mo, d, consumed = 0;
    if (text.size() == 10 && std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &consumed) == 3 &&
        consumed == 10) {
      if (mo < 1 || mo > 12 || d < 1 || d > 31) throw bad();
      return days_from_civil(y, mo, d) * 86400;
    }
  }
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

std::string format_rfc3339(int64_t unix_seconds) { return format_utc(unix_seconds, "%Y-%m-%dT%H:%M:%SZ"); }

// ---------------------------------------------------------------- rendering

namespace {

std::string ratio(const std::optional<double>& v) { return v ? fixed(*v, 4) : ""; }

const std::vector<std::string> kHeaders = {"gpu_hours_held", "gpu_hours_busy", "cost_busy",   "cost_idle",
                                           "cost_total",     "sm_active",      "sm_occupancy", "tensor_active",
                                           "dram_active",    "vram_gib_hours", "launches",
                                           "energy_kwh",     "carbon_kg_co2e"};

// The table shows a memory cost column only when the range has one (memory_price_share, vram_per_gib_hour).
bool has_memory_cost(const Report& r) { return r.total.cost_memory_micros > 0; }

std::vector<std::string> table_cells(const Row& row, bool memory) {
  std::vector<std::string> cells = {display_name(row.key),
          fixed(row.gpu_hours_held, 4),
          fixed(row.gpu_hours_busy, 4),
          money(row.cost_busy_micros),
          money(row.cost_idle_micros)};
  if (memory) cells.push_back(money(row.cost_memory_micros));
  std::vector<std::string> rest = {
          money(row.cost_total_micros()),
          pct(row.efficiency.sm_active),
          pct(row.efficiency.sm_occupancy),
          pct(row.efficiency.tensor_active),
          pct(row.efficiency.dram_active),
          fixed(row.vram_gib_hours, 4),
          std::to_string(row.launches),
          energy_kwh(row.energy_millijoules, 4, "unknown"),
          carbon_kg(row.carbon_grams, 4, "unknown")};
  cells.insert(cells.end(), rest.begin(), rest.end());
  return cells;
}

// Allocated against used, after the main columns (allocation_use.h).
const std::vector<std::string> kShareHeaders = {"allocated_share", "used_share", "used_vram_share",
                                                "used_energy_share", "share_flag"};

std::vector<std::string> share_cells(const Row& row, int decimals, const std::string& unknown) {
  auto cell = [&](const std::optional<double>& v) { return v ? fixed(*v, decimals) : unknown; };
  return {cell(row.allocated_share()), cell(row.used_share()), cell(row.used_vram_share()),
          cell(row.used_energy_share()), std::string(ledger::to_string(row.share_flag()))};
}

// "team-a (allocated 0.30, used 0.55)"
std::string flagged(const Row& row) {
  return display_name(row.key) + " (allocated " + fixed(*row.allocated_share(), 2) + ", used " +
         fixed(*row.used_share(), 2) + ")";
}

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json row_json(const Row& row) {
  return {{"key", row.key},
          {"gpu_hours_held", row.gpu_hours_held},
          {"gpu_hours_busy", row.gpu_hours_busy},
          {"cost_busy", money(row.cost_busy_micros)},
          {"cost_idle", money(row.cost_idle_micros)},
          {"cost_memory", money(row.cost_memory_micros)},
          {"cost_memory_micros", row.cost_memory_micros},
          {"allocated_share", opt_json(row.allocated_share())},
          {"used_share", opt_json(row.used_share())},
          {"used_vram_share", opt_json(row.used_vram_share())},
          {"used_energy_share", opt_json(row.used_energy_share())},
          {"share_flag", std::string(ledger::to_string(row.share_flag()))},
          {"cost_total", money(row.cost_total_micros())},
          {"cost_busy_micros", row.cost_busy_micros},
          {"cost_idle_micros", row.cost_idle_micros},
          {"cost_total_micros", row.cost_total_micros()},
          {"sm_active", opt_json(row.efficiency.sm_active)},
          {"sm_occupancy", opt_json(row.efficiency.sm_occupancy)},
          {"tensor_active", opt_json(row.efficiency.tensor_active)},
          {"dram_active", opt_json(row.efficiency.dram_active)},
          {"vram_gib_hours", row.vram_gib_hours},
          {"launches", row.launches},
          {"split_busy_gpu_hours", row.split_busy_hours},
          {"split_source", split_source_cell(row.split_busy_hours)},
          {"energy_kwh", row.energy_millijoules ? nlohmann::json(static_cast<double>(*row.energy_millijoules) / 3.6e9)
                                                : nlohmann::json(nullptr)},
          {"energy_millijoules",
           row.energy_millijoules ? nlohmann::json(*row.energy_millijoules) : nlohmann::json(nullptr)},
          {"carbon_kg_co2e", row.carbon_grams ? nlohmann::json(*row.carbon_grams / 1000.0) : nlohmann::json(nullptr)}};
}

}  // namespace

std::string render_table(const Report& r) {
  const bool memory = has_memory_cost(r);
  std::vector<std::string> head = {to_string(r.by)};
  for (const auto& h : kHeaders) {
    head.push_back(h);
    if (memory && h == "cost_idle") head.push_back("cost_memory");
  }
  std::vector<std::vector<std::string>> lines = {head};
  for (const auto& row : r.rows) lines.push_back(table_cells(row, memory));
  lines.push_back(table_cells(r.total, memory));
  std::ostringstream out;
  out << "GPU chargeback " << format_rfc3339(r.from) << " .. " << format_rfc3339(r.to) << " by " << to_string(r.by)
      << " (" << display_name(r.currency) << ", " << r.source << ")\n\n";
  out << aligned_columns(lines, true);
  out << "\nTop wasters (idle cost)\n";
  if (r.top_wasters.empty()) out << "  none\n";
  size_t kw = 0;
  for (const auto& w : r.top_wasters) kw = std::max(kw, display_name(w.key).size());
  for (size_t i = 0; i < r.top_wasters.size(); ++i) {
    const Row& w = r.top_wasters[i];
    const std::string name = display_name(w.key);
    double share = w.cost_total_micros() ? 100.0 * w.cost_idle_micros / w.cost_total_micros() : 0;
    out << "  " << (i + 1) << ". " << name << std::string(kw - name.size(), ' ') << "  " << money(w.cost_idle_micros)
        << " " << display_name(r.currency) << " idle (" << fixed(share, 1) << "% of its cost)\n";
  }
  if (r.by != GroupBy::kGpu && std::any_of(r.rows.begin(), r.rows.end(), [](const Row& x) { return x.share_hours > 0; })) {
    out << "\nAllocated against used (shares of the GPUs held or used; flag: used more or less than allocated by "
        << "more than " << fixed(ledger::kShareFlagMargin, 2) << ")\n";
    std::vector<std::vector<std::string>> shares = {{to_string(r.by)}};
    for (const auto& h : kShareHeaders) shares[0].push_back(h);
    for (const auto& row : r.rows) {
      if (!(row.share_hours > 0)) continue;
      std::vector<std::string> l = {display_name(row.key)};
      for (auto& c : share_cells(row, 4, "unknown")) l.push_back(std::move(c));
      shares.push_back(std::move(l));
    }
    out << aligned_columns(shares, false);
    out << "Over-users (used more than allocated):";
    if (r.over_users.empty()) out << " none";
    for (const auto& row : r.over_users) out << "\n  " << flagged(row);
    out << "\nUnder-users (used less than allocated):";
    if (r.under_users.empty()) out << " none";
    for (const auto& row : r.under_users) out << "\n  " << flagged(row);
    out << "\n";
  }
  if (r.rightsizing) out << "\n" << rightsizing_table_section(*r.rightsizing);
  if (!r.notes.empty()) {
    out << "\nNotes\n";
    for (const auto& n : r.notes) out << "  * " << n << "\n";
  }
  return out.str();
}

// The money columns are exact (six decimals: the ledger's micro-units); the
// last column names their currency, so a sheet that merges reports cannot mix
// them up.
std::string render_csv(const Report& r, bool totals_row) {
  std::string out = to_string(r.by);
  for (const auto& h : kHeaders) {
    out += "," + h;
    if (h == "cost_idle") out += ",cost_memory";
  }
  for (const auto& h : kShareHeaders) out += "," + h;
  out += ",currency\r\n";
  auto emit = [&](const Row& row) {
    std::vector<std::string> cells = {row.key,
                                      fixed(row.gpu_hours_held, 6),
                                      fixed(row.gpu_hours_busy, 6),
                                      money(row.cost_busy_micros),
                                      money(row.cost_idle_micros),
                                      money(row.cost_memory_micros),
                                      money(row.cost_total_micros()),
                                      ratio(row.efficiency.sm_active),
                                      ratio(row.efficiency.sm_occupancy),
                                      ratio(row.efficiency.tensor_active),
                                      ratio(row.efficiency.dram_active),
                                      fixed(row.vram_gib_hours, 6),
                                      std::to_string(row.launches),
                                      energy_kwh(row.energy_millijoules, 6, ""),
                                      carbon_kg(row.carbon_grams, 6, "")};
    for (auto& c : share_cells(row, 6, "")) cells.push_back(std::move(c));
    cells.push_back(r.currency);
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    out += "\r\n";
  };
  for (const auto& row : r.rows) emit(row);
  if (totals_row) emit(r.total);
  return out;
}

std::string render_json(const Report& r) {
  nlohmann::json j;
  j["from"] = format_rfc3339(r.from);
  j["to"] = format_rfc3339(r.to);
  j["by"] = to_string(r.by);
  j["currency"] = r.currency;
  j["source"] = r.source;
  if (r.generated_at) j["generated_at"] = format_rfc3339(r.generated_at);
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) j["rows"].push_back(row_json(row));
  j["total"] = row_json(r.total);
  j["share_flag_margin"] = ledger::kShareFlagMargin;
  for (const auto& [name, rows] : {std::pair{"over_users", &r.over_users}, std::pair{"under_users", &r.under_users}}) {
    j[name] = nlohmann::json::array();
    for (const auto& row : *rows)
      j[name].push_back({{"key", row.key}, {"allocated_share", *row.allocated_share()}, {"used_share", *row.used_share()}});
  }
  j["top_wasters"] = nlohmann::json::array();
  for (const auto& row : r.top_wasters)
    j["top_wasters"].push_back(
        {{"key", row.key}, {"cost_idle", money(row.cost_idle_micros)}, {"cost_idle_micros", row.cost_idle_micros}});
  j["bucket_seconds"] = r.bucket_seconds;
  j["cost_by_team_over_time"] = nlohmann::json::array();
  for (const auto& [start, teams] : r.cost_by_team_over_time)
    j["cost_by_team_over_time"].push_back({{"start", format_rfc3339(start)}, {"cost_micros", teams}});
  j["prices"] = nlohmann::json::array();
  for (const auto& p : r.prices)
    j["prices"].push_back({{"model", p.model}, {"gpu_hours", p.gpu_hours}, {"cost_micros", p.cost_micros}});
  const Coverage& c = r.coverage;
  j["coverage"] = {{"windows", c.windows},
                   {"windows_without_device_data", c.windows_without_device},
                   {"hourly_windows", c.hourly_windows},
                   {"window_gpu_hours", c.window_gpu_hours},
                   {"observed_gpu_hours", c.observed_gpu_hours},
                   {"gpus", c.gpus},
                   {"gpus_without_device_data", c.gpus_without_device},
                   {"windows_by_split_source", c.windows_by_split_source}};
  if (r.rightsizing) j["rightsizing"] = rightsizing_json(*r.rightsizing);
  j["notes"] = r.notes;
  // Names are tenants' bytes: invalid UTF-8 becomes U+FFFD rather than an exception.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render(const Report& r, Format f, const RenderOptions& options) {
  // Group keys are tenant-chosen names (and a fleet report's come from any
  // Prometheus): every format leaves as valid UTF-8.
  switch (f) {
    case Format::kTable: return valid_utf8(render_table(r));
    case Format::kCsv: return valid_utf8(render_csv(r, options.csv_totals));
    case Format::kJson: return render_json(r);
    case Format::kHtml: return valid_utf8(render_html(r));
  }
  return "";
}

}  // namespace gpuledger::report
