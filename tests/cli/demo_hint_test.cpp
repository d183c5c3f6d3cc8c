#include "cli/demo_hint.h"

#include <gtest/gtest.h>

#include "report/report.h"
#include "report/report_time.h"

namespace gpuledger::cli {
namespace {

// Issue 34: the hint asked for `--from 1796193265 --to 1796193289`.
TEST(DemoHint, TheRangeIsWrittenInRfc3339) {
  EXPECT_EQ(demo_report_hint("/src/build/gpuledger", "/tmp/gpuledger-demo-7/ledger.db", 1796193265, 1796193289),
            "\nThe ledger is in /tmp/gpuledger-demo-7/ledger.db: try\n"
            "  /src/build/gpuledger report --store /tmp/gpuledger-demo-7/ledger.db"
            " --from 2026-12-02T06:34:25Z --to 2026-12-02T06:34:49Z --by pod --format html -o report.html\n");
}

// The command it prints must select the demo's range exactly: report's
// --from/--to read the same instants back.
TEST(DemoHint, ReportReadsTheRangeBack) {
  for (int64_t t : {int64_t{0}, int64_t{1796230800}, int64_t{1796230824}, int64_t{4102444799}}) {
    const std::string hint = demo_report_hint("g", "s", t, t + 24);
    const auto from = hint.find("--from ") + 7;
    const auto to = hint.find("--to ") + 5;
    EXPECT_EQ(report::parse_time(hint.substr(from, hint.find(' ', from) - from), 0), t) << hint;
    EXPECT_EQ(report::parse_time(hint.substr(to, hint.find(' ', to) - to), 0), t + 24) << hint;
  }
}

}  // namespace
}  // namespace gpuledger::cli
