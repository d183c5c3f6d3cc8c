#include "report/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/inert_text.h"
#include "common/not_probed.h"
#include "common/utf8.h"
#include "ledger/device_quality.h"
#include "ledger/prices.h"
#include "report/calendar.h"
#include "report/report_text.h"
#include "report/special_accounts.h"
#include "report/bill_words.h"
#include <functional>
#include "report/bill_audit.h"
#include "report/shown_money.h"
#include "report/rightsizing_render.h"
#include "report/split_sources.h"
#include "report/report_time.h"

namespace gpuledger::report {

// ---------------------------------------------------------------- rendering

namespace {

std::string ratio(const std::optional<double>& v) { return v ? fixed(*v, 4) : ""; }

const std::vector<std::string> kHeaders = {"gpu_hours_held", "gpu_hours_busy", "cost_busy",   "cost_idle",
                                           "cost_total",     "sm_active",      "sm_occupancy", "tensor_active",
                                           "dram_active",    "vram_gib_hours", "launches",
                                           "energy_kwh",     "carbon_kg_co2e"};

// The table shows a memory cost column only when the range has one (memory_price_share, vram_per_gib_hour).
bool has_memory_cost(const Report& r) { return r.total.cost_memory_micros > 0; }

// Allocated against used, after the main columns (allocation_use.h).
const std::vector<std::string> kShareHeaders = {"allocated_share", "used_share", "used_vram_share",
                                                "used_energy_share", "share_flag"};

std::vector<std::string> share_cells(const Row& row, int decimals, const std::string& unknown) {
  auto cell = [&](const std::optional<double>& v) { return v ? fixed(*v, decimals) : unknown; };
  return {cell(row.allocated_share()), cell(row.used_share()), cell(row.used_vram_share()),
          cell(row.used_energy_share()), std::string(ledger::to_string(row.share_flag()))};
}

// "team-a (allocated 0.30, used 0.55)", raw: say() shows it.
std::string flagged(const Row& row) {
  return row.key + " (allocated " + fixed(*row.allocated_share(), 2) + ", used " +
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
          {"team", row.team.empty() ? nlohmann::json(nullptr) : nlohmann::json(row.team)},
          {"sm_active_of_held", opt_json(row.efficiency_of_held.sm_active)},
          {"sm_occupancy_of_held", opt_json(row.efficiency_of_held.sm_occupancy)},
          {"tensor_active_of_held", opt_json(row.efficiency_of_held.tensor_active)},
          {"dram_active_of_held", opt_json(row.efficiency_of_held.dram_active)},
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

nlohmann::json audit_json(const Report& r) {
  const Audit& a = r.audit;
  nlohmann::json j = {{"bill_id", a.bill_id},
                      {"node", a.node.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.node)},
                      {"cluster", a.cluster.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.cluster)},
                      {"partial_period", a.partial_period},
                      {"cost_policies", a.cost_policies},
                      {"lines", audit_lines(r)}};
  if (a.node.empty()) j["node_unknown_because"] = kNodeUnknown;
  if (a.cluster.empty()) j["cluster_unknown_because"] = kClusterUnknown;
  j["price_lists"] = nlohmann::json::array();
  for (const auto& [since, json] : a.price_lists)
    j["price_lists"].push_back({{"since", format_rfc3339(since)}, {"prices", nlohmann::json::parse(json, nullptr, false)}});
  nlohmann::json special = nlohmann::json::object();
  for (const auto& [account, meaning] : special_accounts_of(r)) special[account] = meaning;
  j["special_accounts"] = special;
  return j;
}


// The table's columns: a header for people, the cell of a row (i: its index
// in the rows; npos: TOTAL), and whether it is shown without --wide.
struct TableColumn {
  std::string header;
  std::function<std::string(const Row&, size_t)> cell;
  bool narrow;
};

// Cuts a name to `max` bytes at a character boundary, marking the cut.
// `name` is shown text (display_name): the cut keeps whole escapes and characters.
std::string shorten(const std::string& name, size_t max) {
  if (name.size() <= max || max < 4) return name;
  return name.substr(0, inert_cut(name, max - 2)) + "..";
}

constexpr size_t kTableWidth = 120;

// Some row used a GPU it was not allocated, or was allocated one it ran nothing on.
bool has_use_facts(const Report& r) {
  return std::any_of(r.rows.begin(), r.rows.end(), [](const Row& x) {
    return x.used_unallocated_hours.value_or(0) > 0 || x.allocated_unused_hours.value_or(0) > 0;
  });
}

// An efficiency cell: a value the row's suspect device data left unknown
// says so (ledger/device_quality.h), never 0 % nor a bare unknown.
std::string eff_pct(const Row& row, const std::optional<double>& v) {
  if (!v && row.device_suspect_windows > 0) return "suspect";
  return pct(v);
}

size_t widest_line(const std::string& text) {
  size_t widest = 0, start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) widest = std::max(widest, nl - start);
  return widest;
}

}  // namespace

std::string render_table(const Report& r) { return render_table(r, false); }

std::string render_table(const Report& r, bool wide) {
  const bool memory = has_memory_cost(r);
  const ShownCosts shown = shown_costs(r.rows, r.currency);
  const int hd = wide ? 4 : 2;  // decimals of GPU-hours
  auto money_of = [&](ShownCosts::Column c) {
    return [&, c](const Row&, size_t i) { return i == std::string::npos ? shown.total_cell(c) : shown.cell(i, c); };
  };
  std::vector<TableColumn> cols = {
      {"GPU-h held", [&](const Row& x, size_t) { return fixed(x.gpu_hours_held, hd); }, true},
      {"GPU-h busy", [&](const Row& x, size_t) { return fixed(x.gpu_hours_busy, hd); }, true},
      {"Busy cost", money_of(ShownCosts::kBusy), true},
      {"Idle cost", money_of(ShownCosts::kIdle), true}};
  if (memory) cols.push_back({"Memory cost", money_of(ShownCosts::kMemory), true});
  cols.push_back({"Total cost", money_of(ShownCosts::kTotal), true});
  cols.push_back({"SM active of held", [](const Row& x, size_t) { return eff_pct(x, x.efficiency_of_held.sm_active); }, true});
  cols.push_back({"of GPU", [](const Row& x, size_t) { return eff_pct(x, x.efficiency.sm_active); }, true});
  cols.push_back({"Occupancy of held", [](const Row& x, size_t) { return eff_pct(x, x.efficiency_of_held.sm_occupancy); }, false});
  cols.push_back({"of GPU", [](const Row& x, size_t) { return eff_pct(x, x.efficiency.sm_occupancy); }, false});
  cols.push_back({"Tensor of held", [](const Row& x, size_t) { return eff_pct(x, x.efficiency_of_held.tensor_active); }, false});
  cols.push_back({"of GPU", [](const Row& x, size_t) { return eff_pct(x, x.efficiency.tensor_active); }, false});
  cols.push_back({"DRAM of held", [](const Row& x, size_t) { return eff_pct(x, x.efficiency_of_held.dram_active); }, false});
  cols.push_back({"of GPU", [](const Row& x, size_t) { return eff_pct(x, x.efficiency.dram_active); }, false});
  cols.push_back({"VRAM GiB-h", [&](const Row& x, size_t) { return fixed(x.vram_gib_hours, hd); }, false});
  cols.push_back({"Launches", [&](const Row& x, size_t) {
                    return r.launches_not_probed ? std::string(kNotProbedByBilling) : std::to_string(x.launches);
                  }, false});
  cols.push_back({"Energy kWh", [](const Row& x, size_t) { return energy_kwh(x.energy_millijoules, 4, "unknown"); }, false});
  cols.push_back({"kg CO2e", [](const Row& x, size_t) { return carbon_kg(x.carbon_grams, 4, "unknown"); }, false});
  std::erase_if(cols, [&](const TableColumn& c) { return !wide && !c.narrow; });

  auto table = [&](size_t name_max) {
    std::vector<std::vector<std::string>> lines = {{group_title(r.by)}};
    for (const auto& c : cols) lines[0].push_back(c.header);
    auto line = [&](const Row& row, size_t i) {
      std::vector<std::string> l = {i == std::string::npos ? "TOTAL" : shorten(display_name(row.key), name_max)};
      for (const auto& c : cols) l.push_back(c.cell(row, i));
      lines.push_back(std::move(l));
    };
    for (size_t i = 0; i < r.rows.size(); ++i) line(r.rows[i], i);
    line(r.total, std::string::npos);
    return aligned_columns(lines, true);
  };
  std::string body = table(std::string::npos);
  if (!wide && widest_line(body) > kTableWidth) {
    // Too wide: names give way first (--wide shows them whole).
    const size_t over = widest_line(body) - kTableWidth;
    size_t longest = 0;
    for (const auto& row : r.rows) longest = std::max(longest, display_name(row.key).size());
    body = table(std::max<size_t>(12, longest > over ? longest - over : 12));
  }
  std::ostringstream out;
  out << "GPU chargeback " << format_rfc3339(r.from) << " to " << format_rfc3339(r.to) << " by " << to_string(r.by)
      << " (" << display_name(r.currency) << ", " << r.source << ")";
  if (r.audit.partial_period) out << " - PARTIAL PERIOD";
  out << "\n\n";
  if (r.coverage.windows == 0 && r.source != "fleet") out << wrap_text(display_name(no_windows_sentence(r)), kTableWidth, "", "") << "\n";
  out << body;
  // Every sentence goes out through say(), shown inert once (tenant names in it are raw until here).
  auto say = [&](const std::string& text, const std::string& first = "", const std::string& rest = "  ") {
    out << wrap_text(display_name(text), kTableWidth, first, rest);
  };
  say("Money is rounded to the currency's minor unit so that the rows add up to the total (CSV, JSON and FOCUS carry "
      "the exact amounts).");
  say("SM active of held: the row's SM activity over the GPU time it held (above 100%: it used more than it held); "
      "of GPU: its part of the whole GPU's. The total's is the GPUs' own over the range, the same in every grouping.");
  for (const auto& line : unknown_explanations(r)) say(line);
  if (!wide) say("More columns (occupancy, tensor, DRAM, VRAM, launches, energy, carbon): --wide.");
  out << "\nTop wasters (idle cost)\n";
  if (r.top_wasters.empty()) out << "  none\n";
  size_t kw = 0;
  const size_t side_name_max = wide ? std::string::npos : 48;  // the narrow table's other lists: names cut too
  for (const auto& w : r.top_wasters) kw = std::max(kw, shorten(display_name(w.key), side_name_max).size());
  for (size_t i = 0; i < r.top_wasters.size(); ++i) {
    const Row& w = r.top_wasters[i];
    const std::string name = shorten(display_name(w.key), side_name_max);
    double share = w.cost_total_micros() ? 100.0 * w.cost_idle_micros / w.cost_total_micros() : 0;
    out << "  " << (i + 1) << ". " << name << std::string(kw - name.size(), ' ') << "  " << shown_amount(w.cost_idle_micros, r.currency)
        << " " << display_name(r.currency) << " idle (" << fixed(share, 1) << "% of its cost)\n";
  }
  if (r.by != GroupBy::kGpu && std::any_of(r.rows.begin(), r.rows.end(), [](const Row& x) { return x.share_hours > 0; })) {
    out << "\nAllocated against used (shares of the GPUs held or used; flag: used more or less than allocated by "
        << "more than " << fixed(ledger::kShareFlagMargin, 2) << ")\n";
    std::vector<std::vector<std::string>> shares = {
        {group_title(r.by), "Allocated", "Used (activity)", "Used (VRAM)", "Used (energy)", "Flag"}};
    for (const auto& row : r.rows) {
      if (!(row.share_hours > 0)) continue;
      std::vector<std::string> l = {shorten(display_name(row.key), side_name_max)};
      for (auto& c : share_cells(row, 4, "unknown")) l.push_back(std::move(c));
      shares.push_back(std::move(l));
    }
    out << aligned_columns(shares, false);
    out << "Over-users (used more than allocated):" << (r.over_users.empty() ? " none\n" : "\n");
    for (const auto& row : r.over_users) say(flagged(row), "  ", "    ");
    out << "Under-users (used less than allocated):" << (r.under_users.empty() ? " none\n" : "\n");
    for (const auto& row : r.under_users) say(flagged(row), "  ", "    ");
  }
  if (r.coverage.use_observed) {
    // Allocation against use, as facts from the device side (ledger/allocation_use.h).
    out << "\nAllocation against use (device side: NVML's process lists, open /dev/nvidiaN; GPU-hours)\n";
    std::vector<std::vector<std::string>> use = {{group_title(r.by), "Used, not allocated", "Allocated, unused"}};
    for (const auto& row : r.rows)
      if (row.used_unallocated_hours.value_or(0) > 0 || row.allocated_unused_hours.value_or(0) > 0)
        use.push_back({shorten(display_name(row.key), side_name_max), fixed(row.used_unallocated_hours.value_or(0), 4),
                       fixed(row.allocated_unused_hours.value_or(0), 4)});
    if (use.size() == 1) out << "  none seen from the device side\n";
    else out << aligned_columns(use, false);
  }
  if (r.rightsizing && wide) out << "\n" << rightsizing_table_section(*r.rightsizing);
  if (r.rightsizing && !wide) {
    // One line each, for people; --wide adds the table of their evidence.
    out << "\nRecommendations (savings per month in " << display_name(r.currency)
        << ", largest first; --wide shows their evidence)\n";
    if (r.rightsizing->rows.empty()) out << "  none\n";
    for (const auto& rec : r.rightsizing->rows) {
      const std::string saving = rec.saving_per_month_micros
                                     ? "saves " + shown_amount(*rec.saving_per_month_micros, r.currency) + " a month"
                                     : std::string("saving not stated (limited evidence)");
      const std::string confidence = ", confidence " + confidence_text(rec.confidence_hundredths);
      std::string who = rec.key;
      if (!(rec.members.size() == 1 && rec.members[0] == rec.key) && !rec.members.empty()) {
        who += " (";
        for (size_t i = 0; i < rec.members.size() && i < 3; ++i) who += (i ? ", " : "") + rec.members[i];
        if (rec.members.size() > 3) who += " and " + std::to_string(rec.members.size() - 3) + " more";
        who += ")";
      }
      say(who + ": " + std::string(to_string(rec.advice)) +
              (rec.target.empty() ? "" : " " + rec.target) + ", " + saving + confidence + " - " + rec.why,
          "  ", "    ");
    }
  }
  if (!r.notes.empty()) {
    out << "\nNotes\n";
    for (const auto& n : r.notes) out << wrap_text(display_name(n), kTableWidth, "  * ", "    ");
  }
  const auto special = special_accounts_of(r);
  if (!special.empty()) out << "\nSpecial accounts\n";
  for (const auto& [account, meaning] : special) say(account + ": " + meaning, "  ", "    ");
  out << "\nCoverage\n";
  for (const auto& line : coverage_lines(r)) say(line, "  ", "    ");
  out << "\nAudit\n";
  for (const auto& line : audit_lines(r)) say(line, "  ", "    ");
  return out.str();
}

// The money columns are exact (six decimals: the ledger's micro-units); the
// currency column names their unit, so a sheet that merges reports cannot mix
// them up. After it: the charge period of the row ([start, end), clipped to
// the range), the team of a pod's or workload's row, and the node and cluster.
std::string render_csv(const Report& r, bool totals_row) { return render_csv_periods(r, {}, totals_row); }

std::string render_csv_periods(const Report& whole, const std::vector<Report>& periods, bool totals_row) {
  std::string out = to_string(whole.by);
  for (const auto& h : kHeaders) {
    out += "," + h;
    if (h == "cost_idle") out += ",cost_memory";
  }
  for (const auto& h : kShareHeaders) out += "," + h;
  // A pod's or workload's team (--by team names it in the first column already).
  const bool team_column = whole.by == GroupBy::kPod || whole.by == GroupBy::kWorkload;
  // The device data's quality (ledger/device_quality.h), only when a row's is suspect: CSV files of clean ranges keep their columns.
  auto suspect_in = [](const Report& r) {
    return std::any_of(r.rows.begin(), r.rows.end(), [](const Row& x) { return x.device_suspect_windows > 0; });
  };
  bool quality_column = suspect_in(whole);
  for (const auto& p : periods) quality_column = quality_column || suspect_in(p);
  // Allocation against use, only when the range's windows observed it.
  bool use_columns = has_use_facts(whole);
  for (const auto& p : periods) use_columns = use_columns || has_use_facts(p);
  out += std::string(",currency,period_start,period_end") + (team_column ? ",team" : "") + ",node,cluster,bill_id,partial_period" +
         (quality_column ? ",device_data,device_suspect_windows,device_suspect_reasons" : "") +
         (use_columns ? ",used_unallocated_gpu_hours,allocated_unused_gpu_hours" : "") + "\r\n";
  auto emit = [&](const Report& r, const Row& row) {
    // Not probed (probe set billing): empty, as CSV leaves every unknown.
    const std::string launches_cell = whole.launches_not_probed ? "" : std::to_string(row.launches);
    // Text cells are spreadsheet_text (no formula, no control); amounts stay numbers.
    std::vector<std::string> cells = {spreadsheet_text(row.key),
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
                                      launches_cell,
                                      energy_kwh(row.energy_millijoules, 6, ""),
                                      carbon_kg(row.carbon_grams, 6, "")};
    for (auto& c : share_cells(row, 6, "")) cells.push_back(std::move(c));
    cells.push_back(spreadsheet_text(whole.currency));
    cells.push_back(format_rfc3339(r.from));
    cells.push_back(format_rfc3339(r.to));
    if (team_column) cells.push_back(spreadsheet_text(special_account_meaning(row.key).empty() ? row.team : ""));
    cells.push_back(spreadsheet_text(whole.audit.node));
    cells.push_back(spreadsheet_text(whole.audit.cluster));
    cells.push_back(spreadsheet_text(whole.audit.bill_id));
    cells.push_back(whole.generated_at > 0 && r.to > whole.generated_at ? "true" : "false");
    if (quality_column) {
      cells.push_back(row.device_data());
      cells.push_back(std::to_string(row.device_suspect_windows));
      cells.push_back(spreadsheet_text(ledger::describe_findings(row.device_findings)));
    }
    if (use_columns) {
      cells.push_back(row.used_unallocated_hours ? fixed(*row.used_unallocated_hours, 6) : "");
      cells.push_back(row.allocated_unused_hours ? fixed(*row.allocated_unused_hours, 6) : "");
    }
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    out += "\r\n";
  };
  if (periods.empty())
    for (const auto& row : whole.rows) emit(whole, row);
  for (const auto& p : periods)
    for (const auto& row : p.rows) emit(p, row);
  if (totals_row) emit(whole, whole.total);
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
  // The device data's quality per row (ledger/device_quality.h), when some
  // window of the range was suspect: a clean range's rows are as before (and
  // as a fleet database's, which does not carry the quality).
  if (r.coverage.device_quality_judged && r.total.device_suspect_windows > 0) {
    auto flag = [](nlohmann::json& out, const Row& row) {
      out["device_data"] = row.device_data();
      out["device_suspect_windows"] = row.device_suspect_windows;
      out["device_suspect_reasons"] = row.device_findings;
    };
    for (size_t i = 0; i < r.rows.size(); ++i) flag(j["rows"][i], r.rows[i]);
    flag(j["total"], r.total);
  }
  if (r.coverage.use_observed) {  // allocation against use, as facts (ledger/allocation_use.h)
    auto use = [](nlohmann::json& out, const Row& row) {
      out["used_unallocated_gpu_hours"] = opt_json(row.used_unallocated_hours);
      out["allocated_unused_gpu_hours"] = opt_json(row.allocated_unused_hours);
    };
    // In the rows only when there is some: rows without are as before (and as
    // a fleet database's, which does not carry these facts).
    if (has_use_facts(r)) {
      for (size_t i = 0; i < r.rows.size(); ++i) use(j["rows"][i], r.rows[i]);
      use(j["total"], r.total);
    }
    j["allocation_against_use"] = nlohmann::json::array();
    for (const auto& row : r.rows)
      if (row.used_unallocated_hours.value_or(0) > 0 || row.allocated_unused_hours.value_or(0) > 0)
        j["allocation_against_use"].push_back({{"key", row.key},
                                               {"used_unallocated_gpu_hours", row.used_unallocated_hours.value_or(0)},
                                               {"allocated_unused_gpu_hours", row.allocated_unused_hours.value_or(0)}});
  }
  if (r.launches_not_probed) {  // absent, not 0: said why
    for (auto& row : j["rows"]) row["launches"] = nullptr;
    j["total"]["launches"] = nullptr;
    j["launches_not_probed"] = std::string(kNotProbedByBilling);
  }
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
                   {"seconds_watched", c.seconds_watched},
                   {"seconds_agent_down", c.seconds_agent_down},
                   {"seconds_before_agent_started", c.seconds_before_agent},
                   {"seconds_no_data", c.seconds_no_data},
                   {"seconds_not_yet", c.seconds_future},
                   {"windows_by_split_source", c.windows_by_split_source},
                   {"lines", coverage_lines(r)}};
  if (c.windows == 0) j["coverage"]["no_windows"] = no_windows_sentence(r);
  if (c.device_quality_judged) {
    j["coverage"]["windows_by_device_quality"] = {{"ok", c.windows_by_device_quality.count("ok") ? c.windows_by_device_quality.at("ok") : 0},
                                                  {"suspect", c.windows_by_device_quality.count("suspect") ? c.windows_by_device_quality.at("suspect") : 0},
                                                  {"absent", c.windows_by_device_quality.count("absent") ? c.windows_by_device_quality.at("absent") : 0}};
    j["coverage"]["device_suspect_findings"] = c.device_findings;
    j["coverage"]["gpus_device_suspect"] = c.gpus_device_suspect;
  }
  j["unknown_explained"] = unknown_explanations(r);
  if (r.rightsizing) j["rightsizing"] = rightsizing_json(*r.rightsizing);
  j["audit"] = audit_json(r);
  j["notes"] = r.notes;
  // Names are tenants' bytes: invalid UTF-8 becomes U+FFFD rather than an exception.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render(const Report& r, Format f, const RenderOptions& options) {
  // Group keys are tenant-chosen names (and a fleet report's come from any
  // Prometheus): every format leaves as valid UTF-8.
  switch (f) {
    case Format::kTable: return valid_utf8(render_table(r, options.wide));
    case Format::kCsv: return valid_utf8(render_csv(r, options.csv_totals));
    case Format::kJson: return render_json(r);
    case Format::kHtml: return valid_utf8(render_html(r));
    case Format::kFocus: throw Error("FOCUS is made from the windows: use render_bill (bill.h)");
  }
  return "";
}

}  // namespace gpuledger::report
