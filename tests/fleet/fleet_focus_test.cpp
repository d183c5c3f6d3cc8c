// The fleet's FOCUS export written as it is read (issue 30): `report
// --fleet-db --format focus` reads its bill's audit once, then each charge
// period in turn, and writes that period's rows before reading the next, so a
// month of a fleet costs one period of memory. Its text is byte for byte the
// export built whole in memory from the same roll-ups, and its money the
// windows', to the micro-unit, with the same bill id.
#include <gtest/gtest.h>

#include <set>

#include "cli_process.h"
#include "fleet/fleet_reader.h"
#include "fleet_db_fixture.h"
#include "report/bill.h"
#include "report/report.h"
#include "report/report_time.h"

namespace gpuledger::testing {
namespace {

constexpr int64_t kDay0 = kFleetDay0;  // 2027-01-15T00:00:00Z
constexpr int64_t kGenerated = kDay0 + 86400 + 7200;  // SOURCE_DATE_EPOCH: day 1 02:00, some rows partial

report::Granularity granularity(const std::string& g) {
  return g == "hour" ? report::Granularity::kHour : g == "day" ? report::Granularity::kDay : report::Granularity::kMonth;
}

int64_t billed_micros(const std::string& csv) {
  int64_t total = 0;
  for (size_t line = csv.find("\r\n") + 2; line < csv.size(); line = csv.find("\r\n", line) + 2) {
    const std::string cell = csv.substr(line, csv.find(',', line) - line);  // BilledCost, the first column
    const auto dot = cell.find('.');
    total += std::stoll(cell.substr(0, dot)) * 1'000'000 + (dot == std::string::npos ? 0 : std::stoll((cell.substr(dot + 1) + "000000").substr(0, 6)));
  }
  return total;
}

TEST_F(FleetDb, TheFleetFocusIsWrittenPeriodByPeriodAndIsTheSameBytesAsBuiltWhole) {
  // The late window read as hours and windows: its hour's and day's roll-ups not sent again.
  ASSERT_NO_FATAL_FAILURE(ship_two_gpus_and_a_late_window(*pg_, *admin_, scratch_));

  const std::string cli = gpuledger() + " report --fleet-db '" + pg_->conninfo() + "' --fleet-db-password-file " +
                          pg_->admin_password_file() + " --format focus";
  for (const auto& [from, to] : {std::pair{kDay0, kDay0 + 3 * 86400},
                                 std::pair{kDay0 + 22 * 3600 + 600, kDay0 + 86400 + 5 * 3600 + 60}}) {
    const int64_t windows = read(*admin_, from, to, std::nullopt).total;
    for (const std::string g : {"hour", "day", "month"}) {
      SCOPED_TRACE(g + " from " + report::format_rfc3339(from) + " to " + report::format_rfc3339(to));
      const std::string range = " --from " + report::format_rfc3339(from) + " --to " + report::format_rfc3339(to) +
                                " --granularity " + g;
      const std::string file = (scratch_ / ("focus-" + g + ".csv")).string();
      const Proc streamed = run("SOURCE_DATE_EPOCH=" + std::to_string(kGenerated) + " " + cli + range + " -o " + file);
      ASSERT_EQ(streamed.status, 0) << streamed.out;
      const std::string text = slurp(file);
      const std::string whole =
          export_in_one_read(*admin_, from, to, report::Format::kFocus, granularity(g), kGenerated);
      EXPECT_EQ(text, whole);
      EXPECT_EQ(billed_micros(text), windows) << "the rows' money is the windows', to the micro-unit";
      const Proc out = run("SOURCE_DATE_EPOCH=" + std::to_string(kGenerated) + " " + cli + range, " 2>/dev/null");
      EXPECT_EQ(out.out, text) << "stdout: the same pieces";
    }
  }
  // The bill id of the rows (the ragged range's, the last written) is the JSON's: the same windows, whichever
  // roll-ups were read.
  const Proc json = run(cli.substr(0, cli.find(" --format")) + " --from " +
                        report::format_rfc3339(kDay0 + 22 * 3600 + 600) + " --to " +
                        report::format_rfc3339(kDay0 + 86400 + 5 * 3600 + 60) + " --format json", " 2>/dev/null");
  ASSERT_EQ(json.status, 0) << json.out;
  const auto id = json.out.find("sha256:");
  ASSERT_NE(id, std::string::npos) << json.out;
  EXPECT_NE(slurp(scratch_ / "focus-day.csv").find(json.out.substr(id, 71)), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::testing
