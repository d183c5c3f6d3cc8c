// The `gpuledger report` subcommand, and the HTML report in a real browser.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sqlite3.h>

#include "common/utf8.h"
#include "report/report.h"
#include "cli_process.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;
using testing::kT0;

using gpuledger::testing::gpuledger;
using gpuledger::testing::kRange;
using gpuledger::testing::Proc;
using gpuledger::testing::run;
using gpuledger::testing::slurp;

TEST(ReportCli, EveryFormatMatchesTheLibrary) {
  testing::FixtureStore store("cli");
  ledger::Store s(store.path(), ledger::Store::Mode::kReadOnly);
  for (const char* by : {"team", "namespace", "pod", "workload", "gpu"}) {
    Report r = build_report(s.windows(kT0, kT0 + 120), kT0, kT0 + 120, parse_group_by(by));
    r.generated_at = kT0 + 3600;  // SOURCE_DATE_EPOCH: a reproducible generation time
    for (const char* fmt : {"table", "csv", "json", "html"}) {
      Proc got = run("SOURCE_DATE_EPOCH=" + std::to_string(kT0 + 3600) + " " + gpuledger() + " report --store " +
                     store.path() + kRange + " --by " + by + " --format " + fmt);
      EXPECT_EQ(got.status, 0) << got.out;
      EXPECT_EQ(got.out, render(r, parse_format(fmt))) << by << " " << fmt;
    }
  }
  fs::path out = store.dir() / "r.html";
  Proc got = run(gpuledger() + " report --store " + store.path() + kRange + " --format html -o " + out.string());
  EXPECT_EQ(got.status, 0) << got.out;
  EXPECT_EQ(slurp(out).rfind("<!DOCTYPE html>", 0), 0u);
}

// Rows an older agent (or any other writer) stored with raw invalid bytes:
// every format still renders, as valid UTF-8 with U+FFFD where a bad byte was.
TEST(ReportCli, InvalidUtf8InStoredRowsNeverBreaksAReport) {
  testing::FixtureStore store("utf8");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(store.path().c_str(), &db), SQLITE_OK);
  for (const char* sql : {
           "UPDATE accounts SET team = CAST(X'7465616dff' AS TEXT), namespace = CAST(X'6e73c328' AS TEXT), "
           "pod = CAST(X'706f64eda080' AS TEXT) WHERE account NOT LIKE '\\_\\_%' ESCAPE '\\'",
           "UPDATE accounts SET account = account || CAST(X'fe' AS TEXT) WHERE account NOT LIKE '\\_\\_%' ESCAPE '\\'",
           "UPDATE charges SET account = account || CAST(X'fe' AS TEXT) WHERE account NOT LIKE '\\_\\_%' ESCAPE '\\'",
           "UPDATE windows SET model = CAST(X'483130308081' AS TEXT)"})
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  for (const char* by : {"team", "namespace", "pod", "workload", "gpu"}) {
    for (const char* fmt : {"table", "csv", "json", "html"}) {
      Proc got = run(gpuledger() + " report --store " + store.path() + kRange + " --by " + by + " --format " + fmt);
      EXPECT_EQ(got.status, 0) << by << " " << fmt << ": " << got.out;
      EXPECT_TRUE(is_valid_utf8(got.out)) << by << " " << fmt;
    }
  }
  Proc got = run(gpuledger() + " report --store " + store.path() + kRange + " --by team --format json");
  EXPECT_NE(got.out.find("team\xEF\xBF\xBD"), std::string::npos) << got.out;
}

TEST(ReportCli, MonthsPlainDatesAndCsvTotals) {
  testing::FixtureStore store("cli_month");
  // The fixture's two minutes are in January 2027.
  Proc month = run(gpuledger() + " report --store " + store.path() + " --month 2027-01 --format json");
  ASSERT_EQ(month.status, 0) << month.out;
  EXPECT_NE(month.out.find("\"from\": \"2027-01-01T00:00:00Z\""), std::string::npos) << month.out;
  EXPECT_NE(month.out.find("\"to\": \"2027-02-01T00:00:00Z\""), std::string::npos);
  EXPECT_NE(month.out.find("\"cost_total_micros\": 351428"), std::string::npos);
  Proc dates = run(gpuledger() + " report --store " + store.path() + " --from 2027-01-15 --to 2027-01-16 --format csv"
                   " --csv-totals");
  ASSERT_EQ(dates.status, 0) << dates.out;
  EXPECT_NE(dates.out.find("\r\nTOTAL,0.080952,0.045000,0.162000,0.189428,0.000000,0.351428,"), std::string::npos) << dates.out;
  Proc both = run(gpuledger() + " report --store " + store.path() + " --month 2027-01 --from -1d");
  EXPECT_NE(both.status, 0);
  EXPECT_NE(both.out.find("excludes"), std::string::npos) << both.out;
  Proc bad = run(gpuledger() + " report --store " + store.path() + " --month 2027-13");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("--month '2027-13'"), std::string::npos) << bad.out;
}

TEST(ReportCli, ClearErrors) {
  testing::FixtureStore store("cli_err");
  fs::path garbage = store.dir() / "garbage.db";
  std::ofstream(garbage) << std::string(10000, 'x');
  Proc got = run(gpuledger() + " report --store " + garbage.string());
  EXPECT_EQ(got.status, 1);
  EXPECT_NE(got.out.find("ledger store " + garbage.string() + ": not a usable SQLite database"), std::string::npos)
      << got.out;
  got = run(gpuledger() + " report --store " + (store.dir() / "missing.db").string());
  EXPECT_EQ(got.status, 1);
  EXPECT_NE(got.out.find("no such file"), std::string::npos) << got.out;
  got = run(gpuledger() + " report --store " + store.path() + " --by cluster");
  EXPECT_EQ(got.status, 1);
  EXPECT_NE(got.out.find("--by: unknown grouping 'cluster'"), std::string::npos) << got.out;
  got = run(gpuledger() + " report --store " + store.path() + " --from yesterday");
  EXPECT_EQ(got.status, 1);
  EXPECT_NE(got.out.find("time 'yesterday'"), std::string::npos) << got.out;
}

}  // namespace
}  // namespace gpuledger::report
