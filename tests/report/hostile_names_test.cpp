// Hostile names through every output of the real `gpuledger report` and
// `rightsize` (issue 29): no control, bidi or invisible character a tenant put
// in a name reaches a person raw; CSV and FOCUS cells cannot become formulas;
// JSON keeps the exact name.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_process.h"
#include "common/inert_text.h"
#include "common/utf8.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;
using gpuledger::testing::gpuledger;
using gpuledger::testing::kRange;
using gpuledger::testing::Proc;
using gpuledger::testing::run;
using gpuledger::testing::slurp;

// pod-a's workload: clear screen, retitle the window, bell, right-to-left
// override, zero-width space and a byte that is not UTF-8.
const std::string kAccountA = "k8s/\x1b[2J\x1b]0;pwned\x07\xE2\x80\xAEpod-a\xE2\x80\x8B\xFF";
// The store keeps valid UTF-8 (security.md): the bad byte is U+FFFD there.
const std::string kShownA = "k8s/\\x1b[2J\\x1b]0;pwned\\x07\\u202epod-a\\u200b\xEF\xBF\xBD";
// pod-c's workload: long enough that the narrow table cuts it.
std::string account_c() {
  std::string s = "k8s/";
  for (int i = 0; i < 30; ++i) s += "\x1b[31m";
  return s + "pod-c";
}
const std::string kFormula = "=cmd|' /C calc'!A0";

std::string hex(const std::string& bytes) {
  std::string out;
  char b[3];
  for (unsigned char c : bytes) std::snprintf(b, sizeof b, "%02x", c), out += b;
  return "CAST(X'" + out + "' AS TEXT)";
}

class HostileNames : public ::testing::Test {
 protected:
  void SetUp() override {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store_.path().c_str(), &db), SQLITE_OK);
    const std::pair<std::string, std::string> accounts[] = {{"k8s/pod-a", kAccountA}, {"k8s/pod-c", account_c()}};
    std::vector<std::string> sql;
    for (const auto& [from, to] : accounts)
      for (const char* table : {"accounts", "charges", "energy_charges"})
        sql.push_back(std::string("UPDATE ") + table + " SET account = " + hex(to) + " WHERE account = '" + from + "'");
    sql.push_back("UPDATE accounts SET team = " + hex(kFormula) + " WHERE pod = 'pod-a'");
    sql.push_back("UPDATE accounts SET team = '+1+1', namespace = '-2+3', pod = '@SUM(A1)' WHERE pod = 'pod-b'");
    sql.push_back("UPDATE accounts SET team = " + hex("\tTAB") + " WHERE pod = 'pod-c'");
    sql.push_back("UPDATE accounts SET team = " + hex("\r=CR") + " WHERE pod = 'pod-d'");
    for (const auto& s : sql) ASSERT_EQ(sqlite3_exec(db, s.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }

  Proc report(const std::string& args) { return run(gpuledger() + " report --store " + store_.path() + kRange + " " + args, " 2>/dev/null"); }

  testing::FixtureStore store_{"hostile"};
};

// Output meant for a person: valid UTF-8, no control (but line ends), no bidi
// or invisible character, and (but in FOCUS, whose JSON cells have JSON's own
// escapes) every backslash starts a whole escape.
void expect_inert(const std::string& out, const std::string& what, bool whole_escapes = true) {
  ASSERT_FALSE(out.empty()) << what;
  EXPECT_TRUE(is_valid_utf8(out)) << what;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << what;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << what;
  EXPECT_EQ(out.find("\xE2\x80\xAE"), std::string::npos) << what;  // U+202E
  EXPECT_EQ(out.find("\xE2\x80\x8B"), std::string::npos) << what;  // U+200B
  size_t bad;
  char32_t cp = 0;
  for (size_t i = 0; i < out.size();) {
    const size_t n = utf8_sequence(out, i, bad, cp);
    ASSERT_GT(n, 0u) << what;
    if (cp != '\n' && cp != '\r') EXPECT_FALSE(is_shown_escaped(cp)) << what << ": U+" << std::hex << unsigned(cp) << " at " << i;
    if (cp == '\\' && whole_escapes) {
      const std::string rest = out.substr(i + 1, 9);
      const size_t digits = rest[0] == 'x' ? 2 : rest[0] == 'u' ? 4 : rest[0] == 'U' ? 8 : 0;
      EXPECT_TRUE(rest[0] == '\\' || (digits && rest.size() > digits &&
                                      rest.find_first_not_of("0123456789abcdef", 1) >= digits + 1))
          << what << ": a cut escape at " << i << ": " << out.substr(i, 12);
      i += rest[0] == '\\' ? 2 : 1 + digits;
      continue;
    }
    i += n;
  }
}

TEST_F(HostileNames, TableWideAndNarrowShowNamesEscapedAndCutWhole) {
  const Proc wide = report("--by workload --wide");
  ASSERT_EQ(wide.status, 0) << wide.out;
  expect_inert(wide.out, "table --wide");
  EXPECT_NE(wide.out.find(kShownA), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find(inert_text(account_c())), std::string::npos) << wide.out;

  const Proc narrow = report("--by workload");
  ASSERT_EQ(narrow.status, 0) << narrow.out;
  expect_inert(narrow.out, "table");
  EXPECT_NE(narrow.out.find(kShownA), std::string::npos) << narrow.out;
  // pod-c's name is cut, after a whole escape: "k8s/\x1b[31m...\x1b[31m.." .
  EXPECT_EQ(narrow.out.find(inert_text(account_c())), std::string::npos) << narrow.out;
  EXPECT_NE(narrow.out.find("[31m.."), std::string::npos) << narrow.out;

  for (const char* by : {"team", "namespace", "pod", "gpu"}) expect_inert(report(std::string("--by ") + by).out, by);
  const Proc team = report("--by team");
  EXPECT_NE(team.out.find(kFormula), std::string::npos) << team.out;  // a table is not a spreadsheet: no '
  EXPECT_NE(team.out.find("\\x09TAB"), std::string::npos) << team.out;
  EXPECT_NE(team.out.find("\\x0d=CR"), std::string::npos) << team.out;
}

TEST_F(HostileNames, RightsizeTableShowsNamesEscaped) {
  for (const char* by : {"workload", "pod", "namespace", "team"}) {
    const Proc got = run(gpuledger() + " rightsize --store " + store_.path() + kRange + " --by " + by, " 2>/dev/null");
    ASSERT_EQ(got.status, 0) << got.out;
    expect_inert(got.out, std::string("rightsize ") + by);
  }
  const Proc got = run(gpuledger() + " rightsize --store " + store_.path() + kRange + " --by workload", " 2>/dev/null");
  EXPECT_NE(got.out.find(kShownA), std::string::npos) << got.out;
  // The report's own recommendations, one line each and (--wide) as a table.
  for (const char* wide : {"", " --wide"}) {
    const Proc r = report(std::string("--by workload") + wide);
    expect_inert(r.out, std::string("report recommendations") + wide);
    EXPECT_NE(r.out.find("Recommendations"), std::string::npos) << r.out;
  }
}

TEST_F(HostileNames, HtmlShowsNamesEscaped) {
  const fs::path out = store_.dir() / "bill.html";
  const Proc got = report("--by workload --format html -o " + out.string());
  ASSERT_EQ(got.status, 0) << got.out;
  const std::string html = slurp(out);
  expect_inert(html, "html");
  EXPECT_NE(html.find("<td>" + kShownA + "</td>"), std::string::npos);
  const fs::path team_out = store_.dir() / "team.html";
  ASSERT_EQ(report("--by team --format html -o " + team_out.string()).status, 0);
  const std::string team_html = slurp(team_out);
  expect_inert(team_html, "html by team");
  EXPECT_NE(team_html.find("=cmd|&#39; /C calc&#39;!A0"), std::string::npos);
}

TEST_F(HostileNames, CsvTextCellsCannotBeFormulasAndAmountsStayNumbers) {
  const Proc team = report("--by team --format csv");
  ASSERT_EQ(team.status, 0) << team.out;
  expect_inert(team.out, "csv by team");
  EXPECT_NE(team.out.find("\r\n'=cmd|' /C calc'!A0,"), std::string::npos) << team.out;
  EXPECT_NE(team.out.find("\r\n'+1+1,"), std::string::npos) << team.out;
  EXPECT_NE(team.out.find("\r\n\\x09TAB,"), std::string::npos) << team.out;
  EXPECT_NE(team.out.find("\r\n\\x0d=CR,"), std::string::npos) << team.out;
  EXPECT_EQ(team.out.find(",=cmd"), std::string::npos);
  EXPECT_EQ(team.out.find("\r\n=cmd"), std::string::npos);

  const Proc pod = report("--by pod --format csv");
  expect_inert(pod.out, "csv by pod");
  EXPECT_NE(pod.out.find("\r\n'-2+3/@SUM(A1),"), std::string::npos) << pod.out;
  EXPECT_NE(pod.out.find(",'+1+1,"), std::string::npos) << pod.out;  // the team column
  EXPECT_NE(pod.out.find(",'=cmd|' /C calc'!A0,"), std::string::npos) << pod.out;

  const Proc workload = report("--by workload --format csv");
  expect_inert(workload.out, "csv by workload");
  EXPECT_NE(workload.out.find("\r\n" + kShownA + ","), std::string::npos) << workload.out;
  // Amounts are never prefixed.
  EXPECT_EQ(workload.out.find(",'0"), std::string::npos);
  EXPECT_EQ(workload.out.find(",'-0"), std::string::npos);

  const Proc rightsize = run(gpuledger() + " rightsize --store " + store_.path() + kRange + " --by team --format csv", " 2>/dev/null");
  expect_inert(rightsize.out, "rightsize csv");
  EXPECT_NE(rightsize.out.find("\r\n'=cmd|' /C calc'!A0,"), std::string::npos) << rightsize.out;
}

TEST_F(HostileNames, FocusTextCellsCannotBeFormulasAndTagsKeepTheExactNames) {
  const Proc got = report("--format focus");
  ASSERT_EQ(got.status, 0) << got.out;
  expect_inert(got.out, "focus", false);
  // SubAccountId, SubAccountName of pod-a's rows.
  EXPECT_NE(got.out.find(",'=cmd|' /C calc'!A0,'=cmd|' /C calc'!A0,"), std::string::npos) << got.out;
  EXPECT_NE(got.out.find(",'+1+1,'+1+1,"), std::string::npos) << got.out;
  EXPECT_EQ(got.out.find(",=cmd"), std::string::npos);
  // AllocatedResourceId: the account, shown.
  EXPECT_NE(got.out.find("," + kShownA + ","), std::string::npos) << got.out;
  // Tags: ASCII JSON, whose escapes decode to the exact account (the bad byte replaced).
  EXPECT_NE(got.out.find("\\u001b[2J\\u001b]0;pwned\\u0007\\u202epod-a\\u200b\\ufffd"), std::string::npos) << got.out;
}

TEST_F(HostileNames, JsonKeepsTheExactName) {
  const Proc got = report("--by workload --format json");
  ASSERT_EQ(got.status, 0) << got.out;
  EXPECT_NE(got.out.find("\\u001b[2J\\u001b]0;pwned\\u0007"), std::string::npos);  // JSON's own escapes
  const auto j = nlohmann::json::parse(got.out);
  bool found = false;
  for (const auto& row : j["rows"])
    if (row["key"] == valid_utf8(kAccountA)) found = true;  // exact but the byte that is not UTF-8
  EXPECT_TRUE(found) << got.out;
  const Proc team = report("--by team --format json");
  EXPECT_NE(team.out.find("\"" + kFormula + "\""), std::string::npos) << team.out;  // no '
}

// An error naming a hostile path reaches stderr inert.
TEST_F(HostileNames, ErrorsShowPathsEscaped) {
  const fs::path dir = store_.dir() / "\x1b]0;pwned\x07\xE2\x80\xAE";
  fs::create_directories(dir);
  std::ofstream(dir / "ledger.db") << std::string(10000, 'x');
  const Proc got = run(gpuledger() + " report --store '" + (dir / "ledger.db").string() + "'", " 2>&1 >/dev/null");
  EXPECT_EQ(got.status, 1);
  expect_inert(got.out, "stderr");
  EXPECT_NE(got.out.find("/\\x1b]0;pwned\\x07\\u202e/ledger.db: not a usable SQLite database"), std::string::npos)
      << got.out;
}

}  // namespace
}  // namespace gpuledger::report
