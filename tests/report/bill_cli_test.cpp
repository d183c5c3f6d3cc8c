// `gpuledger report` refuses bad input clearly (one sentence on stderr, exit 1,
// nothing on stdout, every file as it was), never writes over a store, says
// when a range has no windows, and prints a table for people.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include "cli_process.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;
using gpuledger::testing::gpuledger;
using gpuledger::testing::kRange;
using gpuledger::testing::Proc;
using gpuledger::testing::run;
using gpuledger::testing::slurp;

Proc run_stdout(const std::string& cmd) { return run(cmd, " 2>/dev/null"); }
Proc run_stderr(const std::string& cmd) { return run(cmd, " 2>&1 >/dev/null"); }

// Exactly one line on stderr, starting with the command's name, and nothing on stdout.
void expect_refused(const std::string& cmd, const std::string& says) {
  Proc out = run_stdout(cmd);
  EXPECT_EQ(out.status, 1) << cmd;
  EXPECT_EQ(out.out, "") << cmd;
  Proc err = run_stderr(cmd);
  EXPECT_EQ(err.out.rfind("gpuledger report: ", 0), 0u) << cmd << ": " << err.out;
  EXPECT_EQ(std::count(err.out.begin(), err.out.end(), '\n'), 1) << err.out;
  EXPECT_NE(err.out.find(says), std::string::npos) << cmd << ": " << err.out;
  EXPECT_EQ(err.out.find("stoll"), std::string::npos) << err.out;
  EXPECT_EQ(err.out.find("[error]"), std::string::npos) << err.out;
}

TEST(BillCli, BadInputIsRefusedClearly) {
  testing::FixtureStore store("bill_bad");
  const std::string base = gpuledger() + " report --store " + store.path();
  expect_refused(base + " --from 2026-11-31 --to 2026-12-02", "time '2026-11-31': no such date");
  expect_refused(base + " --from 99999999999999999999", "time '99999999999999999999'");
  expect_refused(base + " --from -99999999999999999999h", "time '-99999999999999999999h'");
  expect_refused(base + kRange + " --format csv --wide", "--wide applies to --format table only");
  expect_refused(base + kRange + " --format json --csv-totals", "--csv-totals applies to --format csv only");
  expect_refused(base + kRange + " --format table --granularity hour", "--granularity applies to --format csv and focus");
  expect_refused(base + kRange + " --format focus --granularity week", "--granularity 'week'");
  expect_refused(base + kRange + " --timeout-ms 5", "--timeout-ms applies to --prometheus only");
  expect_refused(base + kRange + " --format focus --prometheus http://127.0.0.1:1", "--format focus needs");
  expect_refused(base + kRange + " --format xml", "--format: unknown format 'xml'");
  expect_refused(base + kRange + " --format focus --by pod", "--by does not apply to --format focus");
  expect_refused(base + kRange + " --format csv --idle-after 1h", "--idle-after applies to --format table, json and html");
  // SOURCE_DATE_EPOCH that is not Unix seconds.
  expect_refused("SOURCE_DATE_EPOCH=soon " + base + kRange, "SOURCE_DATE_EPOCH 'soon'");
}

TEST(BillCli, OutputNeverOverwritesAStoreOrLeavesAHalfFile) {
  testing::FixtureStore store("bill_out");
  const std::string base = gpuledger() + " report --store " + store.path() + kRange;
  const std::string before = slurp(store.path());
  expect_refused(base + " -o " + store.path(), "is the ledger store being read");
  EXPECT_EQ(slurp(store.path()), before);
  // Any SQLite file, even another store.
  testing::FixtureStore other("bill_out_other");
  const std::string other_before = slurp(other.path());
  expect_refused(base + " -o " + other.path(), "is a SQLite database");
  EXPECT_EQ(slurp(other.path()), other_before);
  // A bad input leaves an existing -o file as it was.
  const fs::path out = store.dir() / "bill.csv";
  std::ofstream(out) << "last month's bill\n";
  expect_refused(gpuledger() + " report --store " + store.path() + " --from 2026-02-30 -o " + out.string(), "no such date");
  EXPECT_EQ(slurp(out), "last month's bill\n");
  // A good one replaces it whole, with no temporary left beside it.
  Proc ok = run(base + " --format csv -o " + out.string());
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_EQ(ok.out, "");
  EXPECT_EQ(slurp(out).rfind("team,", 0), 0u);
  for (const auto& e : fs::directory_iterator(store.dir()))
    EXPECT_EQ(e.path().filename().string().find(".gpuledger-output-"), std::string::npos) << e.path();
  // A folder that cannot be written: one sentence, nothing left.
  expect_refused(base + " -o " + (store.dir() / "missing" / "bill.csv").string(), "cannot write");
}

TEST(BillCli, ARangeWithNoWindowsSaysSoInEveryFormat) {
  testing::FixtureStore store("bill_empty");
  const std::string base = gpuledger() + " report --store " + store.path() + " --from 2026-06-01 --to 2026-06-02";
  Proc table = run_stdout(base);
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.out.find("No windows in this range"), std::string::npos) << table.out;
  Proc html = run_stdout(base + " --format html");
  EXPECT_NE(html.out.find("No windows in this range"), std::string::npos);
  Proc json = run_stdout(base + " --format json");
  EXPECT_NE(nlohmann::json::parse(json.out)["coverage"]["no_windows"].get<std::string>().find("No windows"),
            std::string::npos);
  // CSV and FOCUS stay loadable (a header, no rows); the sentence goes to stderr.
  for (const char* f : {"csv", "focus"}) {
    Proc out = run_stdout(base + " --format " + f);
    EXPECT_EQ(out.status, 0);
    EXPECT_EQ(std::count(out.out.begin(), out.out.end(), '\n'), 1) << out.out;
    Proc err = run_stderr(base + " --format " + f);
    EXPECT_NE(err.out.find("No windows in this range"), std::string::npos) << err.out;
  }
}

TEST(BillCli, TheTableIsForPeopleAndFits120Columns) {
  testing::FixtureStore store("bill_table");
  {  // A pod with a long name (Kubernetes allows 253 bytes) still fits.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store.path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, ("UPDATE accounts SET pod = '" + std::string(200, 'p') + "' WHERE pod = 'pod-a'").c_str(),
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string base = gpuledger() + " report --store " + store.path() + kRange;
  for (const char* by : {"team", "namespace", "pod", "workload", "gpu"}) {
    Proc t = run_stdout(base + " --by " + by);
    ASSERT_EQ(t.status, 0);
    std::istringstream lines(t.out);
    std::string line;
    while (std::getline(lines, line)) {
      EXPECT_LE(line.size(), 120u) << by << ": " << line;
    }
    EXPECT_NE(t.out.find("Total cost"), std::string::npos);
    EXPECT_EQ(t.out.find("gpu_hours_held"), std::string::npos);
    EXPECT_NE(t.out.find("0.35"), std::string::npos);
    EXPECT_EQ(t.out.find("0.351429"), std::string::npos) << t.out;  // to the cent, not six places
  }
  Proc wide = run_stdout(base + " --wide");
  EXPECT_NE(wide.out.find("VRAM GiB-h"), std::string::npos);
  EXPECT_NE(wide.out.find("kg CO2e"), std::string::npos);
  Proc by_pod = run_stdout(base + " --by pod --format csv");
  EXPECT_NE(by_pod.out.find(",currency,period_start,period_end,team,node,cluster,bill_id,partial_period\r\n"),
            std::string::npos)
      << by_pod.out;
  EXPECT_NE(by_pod.out.find("ml/" + std::string(200, 'p') + ","), std::string::npos);  // whole names in CSV
  EXPECT_NE(by_pod.out.find(",USD,2027-01-15T08:00:00Z,2027-01-15T08:02:00Z,vision,,,sha256:"), std::string::npos)
      << by_pod.out;
}

}  // namespace
}  // namespace gpuledger::report
