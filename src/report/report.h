#pragma once
// `gpuledger report`: the chargeback over a time range, grouped by team,
// namespace, pod, workload or GPU, as an aligned table, CSV (RFC 4180), JSON
// or one self-contained HTML file with inline SVG charts. What each column
// means, how rows are sorted and what the special rows are: docs/ledger.md,
// *Report* ("Each column, exactly"). A report is built streaming
// (ReportBuilder: one window at a time), so a month of windows takes the
// memory of its groups, not of its rows.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ledger/allocation_use.h"
#include "ledger/store.h"
#include "report/report_choices.h"
#include "report/rightsizing.h"

namespace gpuledger::report {

struct Row {
  std::string key;
  std::string team;  // --by pod and workload: the team the row's accounts carry (the last seen)
  double gpu_hours_held = 0;
  double gpu_hours_busy = 0;
  int64_t cost_busy_micros = 0;
  int64_t cost_idle_micros = 0;
  int64_t cost_memory_micros = 0;
  // Efficiency, two ways (unknown = nullopt): `efficiency` is the row's part of
  // the whole GPU (its slice of the device's activity, weighted by window x GPU
  // fraction); `efficiency_of_held` the same activity over what it held (its
  // slice / its held share: 1 = it kept what it held as busy as the GPU can be;
  // above 1: it used more than it held). Equal on exclusive GPUs and --by gpu.
  ledger::Efficiency efficiency;
  ledger::Efficiency efficiency_of_held;
  double vram_gib_hours = 0;
  uint64_t launches = 0;
  double efficiency_hours = 0;  // the weight of this row's efficiency in the TOTAL's
  std::optional<int64_t> energy_millijoules;  // unknown = nullopt
  std::optional<double> carbon_grams;         // unknown = nullopt
  // Allocated against used: GPU-hours of the windows where the row held or
  // used a slot, and those hours weighted by each share.
  double share_hours = 0, allocated_hours = 0, used_hours = 0, vram_used_hours = 0;
  double allocated_unknown_hours = 0;  // of share_hours, where its allocated share was unknown
  double energy_share_hours = 0, energy_used_hours = 0;  // windows with known energy only
  // Busy GPU-hours by the evidence that split their windows (split_sources.h).
  std::map<std::string, double> split_busy_hours;
  // The quality of the device data of the windows the row held or used
  // (ledger/device_quality.h; windows from before it was judged: ok with a
  // device reading, else absent), and the suspect ones' findings
  // ("field:reason" -> windows).
  int64_t device_ok_windows = 0, device_suspect_windows = 0, device_absent_windows = 0;
  std::map<std::string, int64_t> device_findings;
  // "suspect" when any of its windows was, else "ok" with any device data, else "absent".
  std::string device_data() const;
  // Allocation against use from the device side (ledger/allocation_use.h),
  // GPU-hours (x GPU fraction): used on a GPU it was not allocated, and
  // allocated without any of its processes on it; nullopt: not observed.
  std::optional<double> used_unallocated_hours, allocated_unused_hours;
  int64_t cost_total_micros() const { return cost_busy_micros + cost_idle_micros + cost_memory_micros; }
  void add_cost(ledger::ChargeKind kind, int64_t micros);
  std::optional<double> allocated_share() const;
  std::optional<double> used_share() const;
  std::optional<double> used_vram_share() const;
  std::optional<double> used_energy_share() const;
  ledger::ShareFlag share_flag() const;  // kNone for special rows and rows without shares
};

// What the range's data covers: how much of it had device readings (else
// busy time comes from eBPF kernel spans and efficiency is unknown).
struct Coverage {
  int64_t windows = 0;                  // stored (GPU slot, window) records in the range
  int64_t windows_without_device = 0;   // of those, with no device reading at all
  int64_t hourly_windows = 0;           // of those, rolled up into hours (hourly_rollup.h)
  double window_gpu_hours = 0;          // sum of window length x GPU fraction
  double observed_gpu_hours = 0;        // of that, watched by a running agent
  std::vector<std::string> gpus;                  // every GPU slot seen
  std::vector<std::string> gpus_without_device;   // slots with no device reading in any window
  // The range's wall-clock time, in seconds, told apart (bill_words.h):
  int64_t seconds_watched = 0;       // a running agent's windows (live, partial) cover it
  int64_t seconds_agent_down = 0;    // only windows billed afterwards (backfill: agent down; gap: agent stalled)
  int64_t seconds_before_agent = 0;  // before the store's first window: the agent had not started
  int64_t seconds_no_data = 0;       // after that, no window at all
  int64_t seconds_future = 0;        // after the bill was made: not billed yet
  std::map<std::string, int64_t> windows_by_split_source;  // split_sources.h
  // Windows by the quality of their device data: ok, suspect, absent
  // (ledger/device_quality.h); device_quality_judged: some window of the range
  // was judged (schema 9), else the JSON leaves windows_by_device_quality out.
  std::map<std::string, int64_t> windows_by_device_quality;
  bool device_quality_judged = false;
  std::map<std::string, int64_t> device_findings;  // "field:reason" -> suspect windows
  std::vector<std::string> gpus_device_suspect;    // slots with a suspect window
  // Some window of the range observed allocation against use from the device
  // side (schema 9): the JSON's rows and allocation_against_use carry it, CSV
  // its two columns, the table and HTML a section.
  bool use_observed = false;
};

// The effective price of a GPU model over the range: cost / GPU-hours.
struct ModelPrice {
  std::string model;
  int64_t cost_micros = 0;
  double gpu_hours = 0;
};

// What makes a bill auditable (bill_audit.h): where it is from, what it was
// made with, and an identifier that changes when any of that changes.
struct Audit {
  std::string node, cluster;  // empty: unknown (the store does not say; bill_audit.h says why)
  std::string bill_id;        // "sha256:<hex>" over the windows, range, prices and policies; empty: not computed
  bool partial_period = false;  // the range reaches past the generation time: not a closed period
  std::vector<std::string> cost_policies;  // as stored in the range's windows
  std::vector<std::pair<int64_t, std::string>> price_lists;  // (since, canonical JSON) in effect in the range
};

// A team's largest pods (by total cost), for the per-team sections.
struct TeamPods {
  std::string team;
  Row total;
  std::vector<Row> top_pods;  // at most 5
};

struct Report {
  int64_t from = 0, to = 0;
  GroupBy by = GroupBy::kTeam;
  std::string currency = "USD";
  std::string source = "local";  // "local" (a store), "fleet" (Prometheus) or "fleet-db" (src/fleet)
  std::vector<Row> rows;
  Row total;
  std::vector<Row> top_wasters;
  std::vector<Row> over_users, under_users;  // flagged rows, by the size of the gap (largest first)
  int64_t bucket_seconds = 0;
  std::vector<std::pair<int64_t, std::map<std::string, int64_t>>> cost_by_team_over_time;  // micros
  int64_t generated_at = 0;  // Unix seconds; 0: not stated
  Coverage coverage;
  // The GPUs' own efficiency over the range (device values weighted by window
  // x GPU fraction): the TOTAL's, the same whatever the grouping. nullopt: a
  // report built without windows (fleet).
  std::optional<ledger::Efficiency> gpu_efficiency;
  std::vector<ModelPrice> prices;
  std::vector<TeamPods> teams;     // by total cost
  std::vector<std::string> notes;  // caveats in plain words (no prices, data not covered, ...)
  // Every window ran under the billing probe set (probe_set_note.h): launches
  // are shown as kNotProbedByBilling, not as counts.
  bool launches_not_probed = false;
  std::optional<Rightsizing> rightsizing;  // nullopt: none (a fleet report)
  // The windows' spans clipped to the range, merged: all, and those of a running agent.
  std::vector<std::pair<int64_t, int64_t>> covered_spans, watched_spans;
  Audit audit;  // what the bill is of and what made it (bill_audit.h)
};

// The cost over time by team of the part [from, to) of a range, summed where
// the windows are (the fleet database's verified hour or day roll-ups,
// fleet/fleet_chart.h): what the chart shows there instead of the windows read
// that start in it, so those can be read at coarser roll-ups.
struct ChartCosts {
  int64_t from = 0, to = 0;
  int64_t min_window = 0;  // the shortest of the periods summed (end - start), as ReportBuilder::add counts it
  std::map<int64_t, std::map<std::string, int64_t>> cost_by_start;  // period's first start -> team -> micros
};

// Builds a report one window at a time (windows in any order).
class ReportBuilder {
 public:
  // `rightsizing` nullopt: no recommendations (CSV and FOCUS show none, and
  // their evidence was a third of a fleet CSV's time by day).
  ReportBuilder(int64_t from, int64_t to, GroupBy by,
                const std::optional<RightsizingOptions>& rightsizing = RightsizingOptions{});
  ~ReportBuilder();
  ReportBuilder(const ReportBuilder&) = delete;
  ReportBuilder& operator=(const ReportBuilder&) = delete;
  void add(const ledger::WindowRecord& window);
  // The chart's costs in [costs.from, costs.to) are these, whatever add() saw there.
  void use_chart_costs(const ChartCosts& costs);
  // The chart's costs add() counted, over the builder's range, as
  // use_chart_costs takes them (a chart read apart from the bill's rows).
  ChartCosts chart_costs() const;
  Report finish();  // throws Error when the windows mix currencies

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The group key of an account in a window. Special accounts (__idle__,
// __unallocated__) are their own group under every grouping but gpu. An
// account with no team is "(no team)", no namespace "(no namespace)"; a
// workload that is not a pod groups under its workload id for --by pod.
std::string group_key(GroupBy by, const ledger::WindowRecord& window, const ledger::AccountRecord& account);
// group_key by team of an account with that team label.
std::string team_key(const std::string& account, const std::string& team);

Report build_report(const std::vector<ledger::WindowRecord>& windows, int64_t from, int64_t to, GroupBy by,
                    const RightsizingOptions& rightsizing = {});
// The same, streaming the store's windows (Store::for_each_window).
Report build_report(const ledger::Store& store, int64_t from, int64_t to, GroupBy by,
                    const RightsizingOptions& rightsizing = {});
// Tells the range's time apart (Coverage::seconds_*), from the windows' spans
// the builder saw, the store's first window and the bill's generation time.
void add_time_coverage(Report& report, std::optional<int64_t> first_window_start, int64_t generated_at);
// Adds a window's energy parts to the rows of their accounts (row_of).
void add_energy(const ledger::WindowRecord& window, const std::function<Row&(const std::string&)>& row_of);
// Adds a row's energy and carbon to a total (unknown + unknown stays unknown).
void add_energy_totals(Row& total, const Row& row);
// Fills total, top_wasters and sorts rows; used by build_report and the fleet report.
void finish_report(Report& report);
// The per-team sections (by total cost, each with its five largest pods) from
// rows by team and pod key.
std::vector<TeamPods> team_sections(const std::map<std::string, std::map<std::string, Row>>& pods_by_team);

struct RenderOptions {
  bool csv_totals = false;  // CSV: a last row with the totals (key "TOTAL")
  bool wide = false;        // table: every column
};
std::string render(const Report& report, Format format, const RenderOptions& options = {});
std::string render_table(const Report& report);
// For people: human headers, money to the currency's minor unit (rows adding
// up to the total), at most 120 columns (long names are cut); `wide`: every
// column, whole names.
std::string render_table(const Report& report, bool wide);
std::string render_csv(const Report& report, bool totals_row = false);
// CSV by charge period (report --granularity): the rows of each period's
// report, in order, then the whole range's TOTAL when asked; `whole` gives the
// header's grouping, the currency, node and cluster. No periods: whole's rows.
std::string render_csv_periods(const Report& whole, const std::vector<Report>& periods, bool totals_row);
std::string render_json(const Report& report);
std::string render_html(const Report& report);

}  // namespace gpuledger::report
