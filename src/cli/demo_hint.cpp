#include "cli/demo_hint.h"

#include "report/report.h"
#include "report/report_time.h"

namespace gpuledger::cli {

std::string demo_report_hint(const std::string& binary, const std::string& store, int64_t from, int64_t to) {
  return "\nThe ledger is in " + store + ": try\n  " + binary + " report --store " + store + " --from " +
         report::format_rfc3339(from) + " --to " + report::format_rfc3339(to) +
         " --by pod --format html -o report.html\n";
}

}  // namespace gpuledger::cli
