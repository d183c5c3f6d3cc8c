// The HTML bill: one self-contained file (no scripts, no fetched resources)
// for people who pay for GPUs, not for the engineers who run them. Summary
// first; amounts to the cent (the exact micro-units in each cell's tooltip,
// and in CSV/JSON); charts with axes, ticks and a legend; every "unknown"
// and every special row explained.
#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <set>
#include <sstream>

#include "common/not_probed.h"
#include "ledger/device_quality.h"
#include "ledger/window_split.h"
#include "report/chart_time.h"
#include "report/report.h"
#include "report/bill_audit.h"
#include "report/bill_words.h"
#include "report/report_charts.h"
#include "report/report_text.h"
#include "report/shown_money.h"
#include "report/special_accounts.h"
#include "report/rightsizing_render.h"
#include "report/split_sources.h"
#include "report/report_time.h"

namespace gpuledger::report {

namespace {

// The summary's busy hours: never "0.00 busy" beside a busy cost. Under 0.005
// they get the decimals that show them; none at all beside a busy cost says why.
std::string busy_hours_text(const Row& total) {
  const double busy = total.gpu_hours_busy;
  if (busy <= 0 && total.cost_busy_micros > 0)
    return "0 busy attributed (the GPUs reported busy time that no row's measured work accounts for; its cost is "
           "split as the cost policy says)";
  int places = 2;
  while (busy > 0 && places < 6 && fixed(busy, places) == fixed(0, places)) ++places;
  return fixed(busy, places) + " busy";
}

// What finance reads instead of the ledger's account names.
std::string row_name(const std::string& key) {
  if (key == ledger::kIdleAccount) return "Idle (held GPUs' idle time, kept apart)";
  if (key == ledger::kUnallocatedAccount) return "Unallocated (GPU time nobody held)";
  if (key == "__overflow__") return "Overflow (work whose workload was not recorded)";
  if (key == ledger::kAllocationUnknownAccount) return "Allocation unknown (the kubelet could not be read)";
  if (key == ledger::kUnattributedAccount) return "Unattributed (GPU time of processes no workload was found for)";
  return key;
}

// A cell of a column that adds up (shown_money.h): the shown amount, the exact one in the tooltip.
std::string money_cell(int64_t shown_micros, int64_t exact_micros, const Report& r) {
  return "<td class=\"money\" title=\"" + money(exact_micros) + " " + html_escape(r.currency) + " (exact)\">" +
         format_shown(shown_micros, minor_unit_digits(r.currency)) + "</td>";
}

// An amount on its own (not part of a column's sum).
std::string money_cell(int64_t micros, const std::string& currency) {
  return "<td class=\"money\" title=\"" + money(micros) + " " + html_escape(currency) + " (exact)\">" +
         shown_amount(micros, currency) + "</td>";
}

std::string pct_cell(const std::optional<double>& v, const Row* row = nullptr) {
  if (!v && row && row->device_suspect_windows > 0)
    return "<td class=\"unknown\" title=\"The device data of these windows was suspect (" +
           html_escape(ledger::describe_findings(row->device_findings)) +
           "): not used, never shown as 0 %\">suspect</td>";
  if (!v)
    return "<td class=\"unknown\" title=\"No device reading (DCGM or NVML) in these windows, or nothing held to "
           "divide by\">unknown</td>";
  return "<td>" + pct(v) + "</td>";
}

std::string energy_cells(const Row& row) {
  const std::string unknown = "<td class=\"unknown\" title=\"No energy counter or power reading for these windows\">unknown</td>";
  std::string out = row.energy_millijoules ? "<td>" + energy_kwh(row.energy_millijoules, 3, "") + "</td>" : unknown;
  out += row.carbon_grams ? "<td>" + carbon_kg(row.carbon_grams, 3, "") + "</td>"
                          : "<td class=\"unknown\" title=\"No carbon intensity configured (carbon_g_per_kwh)\">unknown</td>";
  return out;
}

std::string share_cell(const std::optional<double>& v) {
  return v ? "<td>" + fixed(*v, 2) + "</td>" : "<td class=\"unknown\">unknown</td>";
}

// Allocated against used: a table and the over- and under-users by name.
std::string allocated_against_used(const Report& r) {
  if (r.by == GroupBy::kGpu ||
      std::none_of(r.rows.begin(), r.rows.end(), [](const Row& x) { return x.share_hours > 0; }))
    return "";
  std::ostringstream h;
  h << "<h2>Allocated against used</h2>\n<table id=\"shares\"><thead><tr><th>" << group_title(r.by)
    << "</th><th>Allocated share</th><th>Used share (work)</th><th>Used share (GPU memory)</th>"
    << "<th>Used share (energy)</th><th>Flag</th></tr></thead><tbody>\n";
  for (const auto& row : r.rows) {
    if (!(row.share_hours > 0)) continue;
    const auto flag = row.share_flag();
    h << "<tr><td>" << html_escape(row_name(row.key)) << "</td>" << share_cell(row.allocated_share())
      << share_cell(row.used_share()) << share_cell(row.used_vram_share()) << share_cell(row.used_energy_share())
      << "<td>" << (flag == ledger::ShareFlag::kOver ? "over-user" : flag == ledger::ShareFlag::kUnder ? "under-user" : "")
      << "</td></tr>\n";
  }
  h << "</tbody></table>\n";
  auto list = [&](const char* id, const char* title, const std::vector<Row>& rows) {
    h << "<h3>" << title << "</h3><ul id=\"" << id << "\">";
    for (const auto& row : rows)
      h << "<li>" << html_escape(row_name(row.key)) << ": allocated " << fixed(*row.allocated_share(), 2) << ", used "
        << fixed(*row.used_share(), 2) << "</li>";
    if (rows.empty()) h << "<li>none</li>";
    h << "</ul>\n";
  };
  list("over-users", "Over-users (used more than allocated)", r.over_users);
  list("under-users", "Under-users (used less than allocated)", r.under_users);
  h << "<p><small>Flagged when the used share (work) and the allocated share differ by more than "
    << fixed(ledger::kShareFlagMargin, 2) << ".</small></p>\n";
  return h.str();
}

// Allocation against use, as facts from the device side (ledger/allocation_use.h).
std::string allocation_against_use(const Report& r) {
  if (!r.coverage.use_observed) return "";
  std::ostringstream h;
  h << "<h2>Allocation against use</h2>\n<p>From the device side (NVML's process lists, the /dev/nvidiaN its "
       "processes hold open): GPU-hours used on a GPU not allocated to the workload, and allocated with none of its "
       "processes on it.</p>\n<table id=\"allocation-use\"><thead><tr><th>"
    << group_title(r.by) << "</th><th>Used, not allocated (GPU-h)</th><th>Allocated, unused (GPU-h)</th></tr></thead><tbody>\n";
  size_t n = 0;
  for (const auto& row : r.rows) {
    if (!(row.used_unallocated_hours.value_or(0) > 0 || row.allocated_unused_hours.value_or(0) > 0)) continue;
    ++n;
    h << "<tr><td>" << html_escape(row_name(row.key)) << "</td><td>" << fixed(row.used_unallocated_hours.value_or(0), 3)
      << "</td><td>" << fixed(row.allocated_unused_hours.value_or(0), 3) << "</td></tr>\n";
  }
  if (n == 0) h << "<tr><td colspan=\"3\">none seen from the device side</td></tr>\n";
  h << "</tbody></table>\n";
  return h.str();
}

std::string duration_words(int64_t seconds) {
  if (seconds < 3600) return duration_words_short(seconds);
  if (seconds % 86400 == 0) return std::to_string(seconds / 86400) + (seconds == 86400 ? " day" : " days");
  if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + (seconds == 3600 ? " hour" : " hours");
  return fixed(static_cast<double>(seconds) / 3600.0, 1) + " hours";
}

const char* kStyle =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1100px;"
    "color:#222;padding:0 16px}table{border-collapse:collapse;font-size:13px;margin:8px 0}"
    "th,td{padding:5px 9px;border-bottom:1px solid #ddd;text-align:right}th{background:#f6f6f6;font-weight:600}"
    "th:first-child,td:first-child{text-align:left}tr.total td{font-weight:bold;border-top:2px solid #333}"
    "h2{margin-top:36px;border-bottom:1px solid #ccc;padding-bottom:4px}.unknown{color:#888;font-style:italic}"
    ".big{font-size:28px;font-weight:bold}.notes{background:#fff7e0;border-left:4px solid #f0b400;padding:8px 14px}"
    "dl.facts{display:grid;grid-template-columns:max-content auto;gap:4px 18px}dt{color:#555}dd{margin:0}"
    ".team{margin-top:18px}small{color:#666}";

// The document's head: the title and the style sheets.
void head(std::ostringstream& h, const Report& r) {
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>GPU bill " << format_rfc3339(r.from) << " .. " << format_rfc3339(r.to) << "</title><style>" << kStyle
    << charts_and_layout_style() << "</style></head><body>\n";
}

// The summary's opening: the range, the total, the notes and the facts.
void summary_facts(std::ostringstream& h, const Report& r, const ShownCosts& shown) {
  const std::string cur = html_escape(r.currency);
  h << "<h1>GPU bill</h1>\n<section id=\"summary\"><p id=\"range\">" << format_date_time(r.from) << " to "
    << format_date_time(r.to) << " (" << duration_words(r.to - r.from) << ", end excluded), "
    << (r.source == "fleet"      ? "every node (from Prometheus)"
        : r.source == "fleet-db" ? "every node (from the fleet database)"
                                 : "this node's ledger")
    << ".</p>\n";
  h << "<p>Total: <span class=\"big\" id=\"total\">" << shown.total_cell(ShownCosts::kTotal) << " " << cur
    << "</span>" << (r.audit.partial_period ? " <strong id=\"partial\">Partial period: the range has not ended</strong>" : "")
    << "</p>\n";
  if (r.coverage.windows == 0 && r.source != "fleet")
    h << "<p id=\"no-windows\">" << html_escape(no_windows_sentence(r)) << "</p>\n";
  if (!r.notes.empty()) {
    h << "<div class=\"notes\" id=\"notes\"><strong>Please note</strong><ul>";
    for (const auto& n : r.notes) h << "<li>" << html_escape(n) << "</li>";
    h << "</ul></div>\n";
  }
  h << "<dl class=\"facts\"><dt>Currency</dt><dd>" << cur << " (amounts to the currency's minor unit, rounded so "
    << "that rows add up to their total; the exact amount, in millionths, is in each cell's tooltip and in the CSV, "
    << "JSON and FOCUS reports)</dd>";
  h << "<dt>Busy / idle</dt><dd>" << shown.total_cell(ShownCosts::kBusy) << " " << cur << " for GPU time in use, "
    << shown.total_cell(ShownCosts::kIdle) << " " << cur << " for GPU time idle";
  if (r.total.cost_memory_micros > 0)
    h << ", " << shown.total_cell(ShownCosts::kMemory) << " " << cur << " for GPU memory";
  h << "</dd>";
  h << "<dt>GPU-hours</dt><dd>" << fixed(r.total.gpu_hours_held, 2) << " held, " << busy_hours_text(r.total) << "</dd>";
  if (r.generated_at) h << "<dt>Generated</dt><dd id=\"generated\">" << format_date_time(r.generated_at) << "</dd>";
  h << "</dl>\n";
}

// Who pays what: each team's total, shown so that they add up.
void who_pays(std::ostringstream& h, const Report& r) {
  if (r.teams.empty()) return;
  const std::string cur = html_escape(r.currency);
  h << "<h3>Who pays what</h3><table id=\"who-pays\"><thead><tr><th>Team</th><th>Amount (" << cur
    << ")</th><th>Share</th></tr></thead><tbody>";
  const double total = static_cast<double>(std::max<int64_t>(1, r.total.cost_total_micros()));
  std::vector<Row> team_totals;
  for (const auto& t : r.teams) team_totals.push_back(t.total);
  const ShownCosts teams = shown_costs(team_totals, r.currency);
  for (size_t i = 0; i < r.teams.size(); ++i) {
    const TeamPods& t = r.teams[i];
    h << "<tr><td>" << html_escape(row_name(t.team)) << "</td>"
      << money_cell(teams.rows[i][ShownCosts::kTotal], t.total.cost_total_micros(), r)
      << "<td>" << fixed(100.0 * static_cast<double>(t.total.cost_total_micros()) / total, 1) << "%</td></tr>";
  }
  h << "</tbody></table>\n";
}

// The price per GPU model: the models' costs add up to the total, so they are shown so.
void model_prices(std::ostringstream& h, const Report& r) {
  if (r.prices.empty()) return;
  const std::string cur = html_escape(r.currency);
  h << "<h3>Price per GPU model</h3><table id=\"prices\"><thead><tr><th>GPU model</th><th>GPU-hours</th><th>Cost ("
    << cur << ")</th><th>Price per GPU-hour (" << cur << ")</th></tr></thead><tbody>";
  std::vector<Row> model_costs(r.prices.size());
  for (size_t i = 0; i < r.prices.size(); ++i) model_costs[i].cost_busy_micros = r.prices[i].cost_micros;
  const ShownCosts models = shown_costs(model_costs, r.currency);
  for (size_t i = 0; i < r.prices.size(); ++i) {
    const ModelPrice& p = r.prices[i];
    const int64_t per_hour = p.gpu_hours > 0 ? std::llround(static_cast<double>(p.cost_micros) / p.gpu_hours) : 0;
    h << "<tr><td>" << html_escape(p.model.empty() ? "(unknown model)" : p.model) << "</td><td>"
      << fixed(p.gpu_hours, 2) << "</td>" << money_cell(models.rows[i][ShownCosts::kTotal], p.cost_micros, r)
      << money_cell(per_hour, r.currency) << "</tr>";
  }
  h << "</tbody></table>\n";
}

// The cost table: a row per group and the total, then what its special rows and unknowns mean.
void cost_table(std::ostringstream& h, const Report& r, const ShownCosts& shown) {
  const std::string cur = html_escape(r.currency);
  const bool memory = r.total.cost_memory_micros > 0;
  h << "<h2>Cost by " << group_title(r.by) << "</h2>\n<table id=\"report\"><thead><tr><th>" << group_title(r.by)
    << "</th><th>GPU-hours held</th><th>GPU-hours busy</th><th>Busy cost (" << cur << ")</th><th>Idle cost (" << cur
    << ")</th>" << (memory ? "<th>Memory cost (" + cur + ")</th>" : "") << "<th>Total (" << cur << ")</th><th>SM active of what it held</th><th>SM active, part of the GPU</th>"
    << "<th>SM occupancy, part of the GPU</th><th>Tensor active, part of the GPU</th>"
    << "<th>Memory bandwidth, part of the GPU</th><th>GPU memory (GiB-hours)</th><th>Kernel launches</th><th>Energy (kWh)</th>"
    << "<th>Carbon (kg CO2e)</th></tr></thead><tbody>\n";
  auto emit = [&](const Row& row, bool total, size_t i) {
    const std::array<int64_t, 4>& cost = total ? shown.total : shown.rows[i];
    h << (total ? "<tr class=\"total\">" : "<tr>") << "<td>" << html_escape(total ? "Total" : row_name(row.key))
      << "</td><td>" << fixed(row.gpu_hours_held, 2) << "</td><td>" << fixed(row.gpu_hours_busy, 2) << "</td>"
      << money_cell(cost[ShownCosts::kBusy], row.cost_busy_micros, r)
      << money_cell(cost[ShownCosts::kIdle], row.cost_idle_micros, r)
      << (memory ? money_cell(cost[ShownCosts::kMemory], row.cost_memory_micros, r) : "")
      << money_cell(cost[ShownCosts::kTotal], row.cost_total_micros(), r) << pct_cell(row.efficiency_of_held.sm_active, &row)
      << pct_cell(row.efficiency.sm_active, &row)
      << pct_cell(row.efficiency.sm_occupancy, &row) << pct_cell(row.efficiency.tensor_active, &row)
      << pct_cell(row.efficiency.dram_active, &row) << "<td>" << fixed(row.vram_gib_hours, 2) << "</td><td>"
      << (r.launches_not_probed ? std::string(kNotProbedByBilling) : std::to_string(row.launches)) << "</td>"
      << energy_cells(row) << "</tr>\n";
  };
  for (size_t i = 0; i < r.rows.size(); ++i) emit(r.rows[i], false, i);
  emit(r.total, true, 0);
  h << "</tbody></table>\n<p><small>Of what it held: the row's activity over the GPU time it held (above 100%: it "
       "used more than it held). Part of the GPU: its share of the whole GPU's activity. The total's efficiency is "
       "the GPUs' own over the range, weighted by GPU-time: the same in every grouping.</small></p>\n";
  const auto special = special_accounts_of(r);
  if (!special.empty()) h << "<dl class=\"facts\" id=\"special-accounts\">";
  for (const auto& [account, meaning] : special)
    h << "<dt>" << html_escape(row_name(account)) << "</dt><dd>" << html_escape(account + ": " + meaning) << "</dd>";
  if (!special.empty()) h << "</dl>\n";
  const auto unknowns = unknown_explanations(r);
  if (!unknowns.empty()) {
    h << "<ul id=\"unknown-explained\">";
    for (const auto& u : unknowns) h << "<li>" << html_escape(u) << "</li>";
    h << "</ul>\n";
  }
}

// Each team with its largest pods, not all: amounts on their own.
void team_pods(std::ostringstream& h, const Report& r) {
  if (r.teams.empty()) return;
  const std::string cur = html_escape(r.currency);
  h << "<h2>Teams and their largest pods</h2>\n";
  for (const auto& t : r.teams) {
    h << "<section class=\"team\"><h3>" << html_escape(row_name(t.team)) << ": "
      << shown_amount(t.total.cost_total_micros(), r.currency) << " " << cur << "</h3><table><thead><tr><th>Pod</th>"
      << "<th>GPU-hours held</th><th>GPU-hours busy</th><th>Idle cost (" << cur << ")</th><th>Total (" << cur
      << ")</th></tr></thead><tbody>";
    for (const auto& p : t.top_pods)
      h << "<tr><td>" << html_escape(row_name(p.key)) << "</td><td>" << fixed(p.gpu_hours_held, 2) << "</td><td>"
        << fixed(p.gpu_hours_busy, 2) << "</td>" << money_cell(p.cost_idle_micros, r.currency)
        << money_cell(p.cost_total_micros(), r.currency) << "</tr>";
    h << "</tbody></table></section>\n";
  }
}

void top_wasters(std::ostringstream& h, const Report& r) {
  const std::string cur = html_escape(r.currency);
  h << "<h2>Top wasters (idle cost)</h2><ol id=\"top-wasters\">";
  for (const auto& w : r.top_wasters)
    h << "<li>" << html_escape(row_name(w.key)) << ": " << shown_amount(w.cost_idle_micros, r.currency) << " " << cur
      << " of GPU time held but idle</li>";
  if (r.top_wasters.empty()) h << "<li>none</li>";
  h << "</ol>\n";
}

// What the windows cover (a ledger's or fleet database's; Prometheus has no windows), then the audit.
void coverage_and_audit(std::ostringstream& h, const Report& r) {
  const Coverage& c = r.coverage;
  h << "<h2>Data coverage</h2>\n<dl class=\"facts\" id=\"coverage\">";
  if (r.source == "fleet") {
    h << "<dt>Source</dt><dd>Prometheus counters scraped from every node's agent</dd>";
  } else {
    h << "<dt>Accounting windows</dt><dd>" << c.windows << " (one per GPU and window)";
    if (c.hourly_windows) h << ", of which " << c.hourly_windows << " are older windows merged into hours";
    h << "</dd><dt>Watched by the agent</dt><dd>"
      << (c.window_gpu_hours > 0 ? fixed(100.0 * c.observed_gpu_hours / c.window_gpu_hours, 1) + "%" : "-")
      << " of the windows' GPU time (the rest was billed afterwards from the kernel counters: the agent was down or "
         "stalled)</dd>";
    h << "<dt>Without device data</dt><dd>" << c.windows_without_device << " of " << c.windows << " windows";
    if (!c.gpus_without_device.empty()) {
      h << "; no device data at all for:";
      for (const auto& g : c.gpus_without_device) h << " " << html_escape(g);
    }
    h << "</dd><dt>GPUs</dt><dd>" << c.gpus.size() << "</dd>";
    h << "<dt>The range's time</dt><dd><ul id=\"coverage-time\">";
    for (const auto& line : coverage_lines(r)) h << "<li>" << html_escape(line) << "</li>";
    h << "</ul></dd>";
    if (std::string split = split_source_summary(c.windows_by_split_source); !split.empty())
      h << "<dt>Busy part split by</dt><dd>" << html_escape(split)
        << " (nvml: NVML per-process SM samples; spans: eBPF busy spans; see docs/ledger.md)</dd>";
  }
  h << "</dl>\n";
  h << "<h2>Audit</h2>\n<ul id=\"audit\">";
  for (const auto& line : audit_lines(r)) h << "<li>" << html_escape(line) << "</li>";
  h << "</ul>\n";
}

// What the columns and the special rows mean.
void glossary(std::ostringstream& h) {
  h << "<h2>What the columns mean</h2>\n<dl class=\"facts\" id=\"glossary\">"
    << "<dt>GPU-hours held</dt><dd>Hours a GPU was allocated to the row (a shared GPU's hour is split among its "
       "holders; a MIG slice counts its fraction of the GPU).</dd>"
    << "<dt>GPU-hours busy</dt><dd>Hours the GPU was actually running the row's work. It can exceed the hours held: "
       "on a shared GPU held time is split evenly among holders, busy time follows who ran kernels; and work on a "
       "GPU nobody was allocated is busy but not held.</dd>"
    << "<dt>Busy cost, idle cost</dt><dd>The price of the GPU time split into time in use and time held but idle "
       "(together, the total).</dd>"
    << "<dt>" << row_name(std::string(ledger::kIdleAccount)) << "</dt><dd>"
    << html_escape(special_account_meaning(std::string(ledger::kIdleAccount))) << ".</dd>"
    << "<dt>" << row_name(std::string(ledger::kUnallocatedAccount)) << "</dt><dd>"
    << html_escape(special_account_meaning(std::string(ledger::kUnallocatedAccount))) << ".</dd>"
    << "<dt>" << row_name(std::string(ledger::kAllocationUnknownAccount)) << "</dt><dd>"
    << html_escape(special_account_meaning(std::string(ledger::kAllocationUnknownAccount))) << ".</dd>"
    << "<dt>SM active, SM occupancy, tensor active, memory bandwidth</dt><dd>How hard the GPU worked, from the GPU's "
       "own counters (DCGM or NVML): of what it held (its activity over the GPU time it held) and its part of the "
       "whole GPU. <em>unknown</em> means no device readings for those windows (a GPU without DCGM/NVML metrics, or "
       "the special rows, which run no work of their own), or, of what it held, that the row held nothing.</dd>"
    << "<dt>GPU memory (GiB-hours)</dt><dd>GPU memory held over time: 1 GiB for one hour is 1.</dd>"
    << "<dt>Memory cost</dt><dd>The part of the GPU's price that is for its memory (memory_price_share, or a price "
       "per GiB-hour of GPU memory: vram_per_gib_hour), billed by the GPU memory each row held; memory nobody held "
       "is billed like idle time.</dd>"
    << "<dt>Allocated, used</dt><dd>The row's share of the GPUs it held or used: allocated (a whole GPU 1, one of N "
       "time-slicing or MPS replicas 1/N, a fractional GPU its fraction, a MIG slice all of that slice) against used "
       "(its share of the work the GPU ran, of the GPU memory held, of the busy energy). Nothing enforces a fraction: "
       "over-users used more than allocated, under-users less.</dd>"
    << "<dt>Kernel launches</dt><dd>Work submissions to the GPU counted by the agent.</dd>\n"
    << "<dt>Energy (kWh)</dt><dd>The GPU's energy (its energy counter, else power integrated over time), split like "
       "its cost: busy energy by activity, idle energy by the idle policy. <em>unknown</em>: the GPU had neither.</dd>\n"
    << "<dt>Carbon (kg CO2e)</dt><dd>Energy times the configured carbon intensity (carbon_g_per_kwh).</dd></dl>\n";
}

}  // namespace

std::string render_html(const Report& r) {
  std::ostringstream h;
  head(h, r);
  const ShownCosts shown = shown_costs(r.rows, r.currency);
  summary_facts(h, r, shown);
  who_pays(h, r);
  model_prices(h, r);
  h << "</section>\n";
  cost_table(h, r, shown);
  team_pods(h, r);
  h << allocated_against_used(r);
  h << allocation_against_use(r);
  top_wasters(h, r);
  if (r.rightsizing) h << rightsizing_html_section(*r.rightsizing);
  h << html_charts(r, row_name);
  coverage_and_audit(h, r);
  glossary(h);
  h << "</body></html>\n";
  return h.str();
}

}  // namespace gpuledger::report
