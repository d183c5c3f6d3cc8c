#pragma once
// A bill from the ledger store in one pass over its windows: the report, its
// audit (bill_audit.h) and time coverage, the CSV's charge periods and the
// FOCUS rows (focus_export.h), rendered in the format asked for.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/bill_inputs.h"
#include "ledger/store.h"
#include "report/charge_period.h"
#include "report/report.h"
#include "report/rightsizing.h"

namespace gpuledger::report {

struct BillRequest {
  int64_t from = 0, to = 0;
  GroupBy by = GroupBy::kTeam;
  Format format = Format::kTable;
  Granularity granularity = Granularity::kDay;  // CSV and FOCUS rows
  RightsizingOptions rightsizing;
  int64_t generated_at = 0;  // the bill's time (partial period: a range reaching past it)
  bool csv_totals = false;
  bool wide = false;
};

// Where a bill's windows and inputs come from: a node's store, or the fleet
// database (fleet/fleet_reader.h), read through the same builder so that both
// bills are the same number for the same windows.
struct BillSource {
  std::function<void(const std::function<void(ledger::WindowRecord&&)>&)> for_each_window;  // the range's windows
  std::optional<int64_t> first_window_start;  // coverage: "before the agent started"
  // Node, cluster, price lists: asked for after the windows were read (a
  // fleet bill names the node and cluster its windows came from).
  std::function<ledger::BillInputs()> inputs;
  std::vector<ledger::Store::MemorySizeUnknown> memory_size_unknown;
  std::vector<std::pair<int64_t, int64_t>> hot_path_not_probed;  // Store::hot_path_not_probed; none from the fleet database
  std::string report_source = "local";  // Report::source
  // What names the windows in the bill id (BillHasher::use_windows_digest),
  // asked for after the windows were read; unset: every window read.
  std::function<std::string()> windows_digest;
  // A part [from, to) of the range, read at the FOCUS or CSV rows' charge
  // period, when the source can (the fleet database: in the same snapshot).
  // Given, a FOCUS export is written period by period (write_bill) instead of
  // held whole in memory (a fleet's month is 720,000 daily rows), and a CSV
  // without a totals row bills each window once, in its period's row, the
  // whole bill (its audit) read by for_each_window at the source's coarsest.
  // A FOCUS export calls it on a thread of its own, one call at a time,
  // while the sink writes the last call's rows: it shares nothing with the
  // sink but what the header's write (before the first call) reads.
  using WindowsIn = std::function<void(int64_t from, int64_t to, const std::function<void(ledger::WindowRecord&&)>&)>;
  WindowsIn for_each_window_in;
  // Another for_each_window_in on a connection of its own, in the same
  // snapshot, for a CSV export's rows to be read on two at once
  // (period_reads.h). Asked for and destroyed on the thread that calls
  // for_each_window_in, called on another while that one reads, one call at a
  // time. Unset, or empty where the source cannot open one: one reader.
  std::function<WindowsIn()> second_reader;
  // The chart's costs of a part of the range (ReportBuilder::use_chart_costs),
  // asked for after the windows were read; nullopt or unset: the windows'.
  std::function<std::optional<ChartCosts>()> chart_costs;
};
BillSource store_bill_source(const ledger::Store& store, int64_t from, int64_t to);

// The whole range's report with its audit and coverage filled.
Report build_bill(const BillSource& source, const BillRequest& request);
Report build_bill(const ledger::Store& store, const BillRequest& request);
// The bill in request.format, as valid UTF-8.
// `whole`, when given, receives the whole range's report.
std::string render_bill(const BillSource& source, const BillRequest& request, Report* whole = nullptr);
std::string render_bill(const ledger::Store& store, const BillRequest& request, Report* whole = nullptr);
// The same text given to `sink` piece by piece: a FOCUS export from a source
// with for_each_window_in as each charge period is read (its audit from a
// first pass over the whole range), every other format in one piece.
void write_bill(const BillSource& source, const BillRequest& request, Report* whole,
                const std::function<void(std::string_view)>& sink);

}  // namespace gpuledger::report
