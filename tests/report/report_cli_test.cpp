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
#include "report/bill.h"
#include "report/report.h"
#include "report/rightsizing_render.h"
#include <nlohmann/json.hpp>
#include <set>
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
    for (const char* fmt : {"table", "csv", "json", "html", "focus"}) {
      BillRequest q;
      q.from = kT0;
      q.to = kT0 + 120;
      q.by = parse_group_by(by);
      q.format = parse_format(fmt);
      q.generated_at = kT0 + 3600;  // SOURCE_DATE_EPOCH: a reproducible generation time
      if (q.format == Format::kFocus && std::string(by) != "team") continue;  // --by does not apply to focus
      Proc got = run("SOURCE_DATE_EPOCH=" + std::to_string(kT0 + 3600) + " " + gpuledger() + " report --store " +
                     store.path() + kRange + (q.format == Format::kFocus ? "" : std::string(" --by ") + by) +
                     " --format " + fmt);
      EXPECT_EQ(got.status, 0) << got.out;
      EXPECT_EQ(got.out, render_bill(s, q)) << by << " " << fmt;
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
  // The recommendations name the same tenants: valid UTF-8 in every format too.
  for (const char* by : {"pod", "workload", "namespace", "team"}) {
    for (const char* fmt : {"table", "csv", "json"}) {
      Proc r = run(gpuledger() + " rightsize --store " + store.path() + kRange + " --by " + by + " --format " + fmt);
      EXPECT_EQ(r.status, 0) << by << " " << fmt << ": " << r.out;
      EXPECT_TRUE(is_valid_utf8(r.out)) << by << " " << fmt;
    }
  }
}

TEST(ReportCli, MonthsPlainDatesAndCsvTotals) {
  testing::FixtureStore store("cli_month");
  // The fixture's two minutes are in January 2027.
  Proc month = run(gpuledger() + " report --store " + store.path() + " --month 2027-01 --format json");
  ASSERT_EQ(month.status, 0) << month.out;
  EXPECT_NE(month.out.find("\"from\": \"2027-01-01T00:00:00Z\""), std::string::npos) << month.out;
  EXPECT_NE(month.out.find("\"to\": \"2027-02-01T00:00:00Z\""), std::string::npos);
  EXPECT_NE(month.out.find("\"cost_total_micros\": 351429"), std::string::npos);
  Proc dates = run(gpuledger() + " report --store " + store.path() + " --from 2027-01-15 --to 2027-01-16 --format csv"
                   " --csv-totals");
  ASSERT_EQ(dates.status, 0) << dates.out;
  EXPECT_NE(dates.out.find("\r\nTOTAL,0.080952,0.045000,0.162000,0.189429,0.000000,0.351429,"), std::string::npos) << dates.out;
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

namespace gpuledger::report {
namespace {

using gpuledger::testing::gpuledger;
using gpuledger::testing::kRange;
using gpuledger::testing::Proc;
using gpuledger::testing::run;

// stdout alone (errors must leave it empty) and the exit status.
Proc run_stdout(const std::string& cmd) { return run(cmd, " 2>/dev/null"); }

TEST(RightsizeCli, JsonShapeMatchesTheLibrary) {
  testing::FixtureStore store("rightsize");
  Proc got = run_stdout(gpuledger() + " rightsize --store " + store.path() + kRange + " --format json");
  ASSERT_EQ(got.status, 0) << got.out;
  const auto j = nlohmann::json::parse(got.out);
  ledger::Store s(store.path(), ledger::Store::Mode::kReadOnly);
  EXPECT_EQ(got.out, render_rightsizing_json(rightsize(s, testing::kT0, testing::kT0 + 120, GroupBy::kPod)));
  ASSERT_EQ(j["rows"].size(), 4u);
  std::set<std::string> advice = {"release", "mig", "time-slice", "more", "keep"};
  for (const auto& row : j["rows"]) {
    for (const char* k : {"key", "recommendation", "target", "saving_per_month", "saving_per_month_micros", "limited",
                          "why", "evidence"})
      EXPECT_TRUE(row.contains(k)) << k;
    EXPECT_TRUE(advice.contains(row["recommendation"].get<std::string>()));
    for (const char* k : {"vram_peak_bytes", "vram_p95_bytes", "sm_active_p95", "busy_share", "idle_seconds_longest",
                          "windows", "sources"})
      EXPECT_TRUE(row["evidence"].contains(k)) << k;
    if (!row["limited"].get<bool>()) {
      EXPECT_TRUE(row["saving_per_month"].is_string());
    }
  }
  // The shared H100's pod-a did three quarters of the work on half of it: an over-user.
  bool over = false;
  for (const auto& row : j["rows"])
    if (row["key"] == "ml/pod-a") over = row["recommendation"] == "more";
  EXPECT_TRUE(over) << got.out;
  for (const char* fmt : {"table", "csv"}) {
    got = run_stdout(gpuledger() + " rightsize --store " + store.path() + kRange + " --by team --format " + fmt);
    EXPECT_EQ(got.status, 0) << fmt;
    EXPECT_NE(got.out.find("vision"), std::string::npos) << got.out;
  }
  // The report carries the same recommendations (table and JSON; CSV unchanged).
  got = run_stdout(gpuledger() + " report --store " + store.path() + kRange + " --by pod --format json");
  ASSERT_EQ(got.status, 0);
  EXPECT_EQ(nlohmann::json::parse(got.out)["rightsizing"]["rows"], j["rows"]);
}

TEST(RightsizeCli, BadInputIsOneSentenceOnStderrAndNothingOnStdout) {
  testing::FixtureStore store("rightsize_err");
  const std::string base = gpuledger() + " rightsize --store " + store.path() + kRange;
  const std::pair<std::string, std::string> cases[] = {
      {" --idle-after soon", "gpuledger rightsize: --idle-after 'soon': expected a duration such as 24h, 90m or 2d\n"},
      {" --vram-headroom 1.5",
       "gpuledger rightsize: --vram-headroom '1.5': expected a fraction from 0 to 1 with at most 6 decimals (e.g. "
       "0.2)\n"},
      {" --vram-headroom -0.1",
       "gpuledger rightsize: --vram-headroom '-0.1': expected a fraction from 0 to 1 with at most 6 decimals (e.g. "
       "0.2)\n"},
      {" --by gpu", "gpuledger rightsize: --by: unknown grouping 'gpu' (pod, workload, namespace, team, user or account)\n"},
      {" --format html", "gpuledger rightsize: --format: unknown format 'html' (table, json or csv)\n"},
      {" --min-evidence week",
       "gpuledger rightsize: --min-evidence 'week': expected a duration such as 24h, 90m or 2d\n"},
  };
  for (const auto& [args, message] : cases) {
    Proc out = run_stdout(base + args);
    EXPECT_NE(out.status, 0) << args;
    EXPECT_EQ(out.out, "") << args;
    Proc both = run(base + args);
    EXPECT_EQ(both.out, message) << args;
  }
  // Flags override the configuration: a 1 min idle_after releases the MIG pod idle for 2 min.
  Proc got = run_stdout(base + " --idle-after 1m --format json");
  ASSERT_EQ(got.status, 0);
  bool released = false;
  const auto j = nlohmann::json::parse(got.out);
  for (const auto& row : j["rows"])
    if (row["key"] == "nlp/pod-d") released = row["recommendation"] == "release";
  EXPECT_TRUE(released) << got.out;
}

// --config's `rightsizing:` section decides; a flag overrides it; a bad file is
// one sentence naming file:line:column.
TEST(RightsizeCli, ConfigurationAndFlagsDecide) {
  testing::FixtureStore store("rightsize_config");
  const std::string base = gpuledger() + " rightsize --store " + store.path() + kRange + " --format json";
  const auto config = store.dir() / "config.yaml";
  std::ofstream(config) << "cost:\n  default_per_hour: 1.00\nrightsizing:\n  idle_after: 1m\n  vram_headroom: 0.5\n";
  auto advice_of_pod_d = [&](const std::string& args) {
    Proc got = run_stdout(base + args);
    EXPECT_EQ(got.status, 0) << args;
    const auto j = nlohmann::json::parse(got.out);
    EXPECT_EQ(j["vram_headroom"], args.find("--vram-headroom") == std::string::npos ? "0.500000" : "0.100000");
    for (const auto& row : j["rows"])
      if (row["key"] == "nlp/pod-d") return row["recommendation"].get<std::string>();
    return std::string("none");
  };
  EXPECT_EQ(advice_of_pod_d(" --config " + config.string()), "release");
  // The report's recommendations follow the same options.
  Proc report = run_stdout(gpuledger() + " report --store " + store.path() + kRange + " --by pod --format json --config " +
                           config.string());
  ASSERT_EQ(report.status, 0);
  EXPECT_EQ(nlohmann::json::parse(report.out)["rightsizing"]["idle_after_seconds"], 60);
  EXPECT_EQ(advice_of_pod_d(" --config " + config.string() + " --idle-after 1h --vram-headroom 0.1"), "mig");
  std::ofstream(config) << "rightsizing:\n  idle_after: soon\n";
  Proc bad = run(base + " --config " + config.string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out, "gpuledger rightsize: config " + config.string() +
                         ":2:15: rightsizing.idle_after 'soon': expected a duration such as 24h, 90m or 2d\n");
}

// Issue 33: --min-evidence (and the configuration's min_evidence) decides
// whether the two-minute fixture's recommendations state a saving; the report
// follows it, and refuses it for CSV.
TEST(RightsizeCli, MinEvidenceDecidesWhetherASavingIsStated) {
  testing::FixtureStore store("rightsize_evidence");
  const std::string base = gpuledger() + " rightsize --store " + store.path() + kRange + " --format json";
  auto stated = [&](const std::string& args) {
    Proc got = run_stdout(base + args);
    EXPECT_EQ(got.status, 0) << args;
    const auto j = nlohmann::json::parse(got.out);
    int n = 0;
    for (const auto& row : j["rows"]) {
      EXPECT_EQ(row["confidence"], 0.0) << row.dump();  // two minutes of evidence
      n += row["saving_per_month_micros"].is_null() ? 0 : 1;
    }
    return n;
  };
  EXPECT_EQ(stated(""), 0);  // the default, 24 h
  EXPECT_EQ(stated(" --min-evidence 0"), 2);
  const auto config = store.dir() / "config.yaml";
  std::ofstream(config) << "rightsizing:\n  min_evidence: 0\n";
  EXPECT_EQ(stated(" --config " + config.string()), 2);
  EXPECT_EQ(stated(" --config " + config.string() + " --min-evidence 1h"), 0);
  Proc report = run_stdout(gpuledger() + " report --store " + store.path() + kRange +
                           " --by pod --format json --min-evidence 30m");
  ASSERT_EQ(report.status, 0);
  EXPECT_EQ(nlohmann::json::parse(report.out)["rightsizing"]["min_evidence_seconds"], 1800);
  Proc csv = run(gpuledger() + " report --store " + store.path() + kRange + " --format csv --min-evidence 0");
  EXPECT_EQ(csv.status, 1);
  EXPECT_EQ(csv.out, "gpuledger report: --min-evidence applies to --format table, json and html (the "
                     "recommendations) only, not csv\n");
}

}  // namespace
}  // namespace gpuledger::report
