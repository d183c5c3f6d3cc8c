#pragma once
// A bill from the ledger store in one pass over its windows: the report, its
// audit (bill_audit.h) and time coverage, the CSV's charge periods and the
// FOCUS rows (focus_export.h), rendered in the format asked for.
#include <cstdint>
#include <string>

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

// The whole range's report with its audit and coverage filled.
Report build_bill(const ledger::Store& store, const BillRequest& request);
// The bill in request.format, as valid UTF-8.
// `whole`, when given, receives the whole range's report.
std::string render_bill(const ledger::Store& store, const BillRequest& request, Report* whole = nullptr);

}  // namespace gpuledger::report
