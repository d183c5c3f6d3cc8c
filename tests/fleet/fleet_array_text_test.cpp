// The array text a shipper's batch and a report's statements send
// (fleet_sql.h, append_array_element), against a real PostgreSQL server
// (pg_server.h): every element comes back from the server's own parse as
// it was sent, whatever bytes a tenant put in a name or a body. And the
// arrays the server sends (pg_array_text.h): each cell read as the text a
// column of it would hold, NULL apart from the word.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "fleet/fleet_sql.h"
#include "fleet/pg_array_text.h"
#include "fleet_db_fixture.h"

namespace gpuledger::testing {
namespace {

TEST_F(FleetDb, AnArrayElementComesBackFromTheServerAsItWasWrittenWhateverItsBytes) {
  std::string every_byte;
  for (int b = 1; b < 128; ++b) every_byte += static_cast<char>(b);
  const std::vector<std::string> items = {
      "", "NULL", "null", "a,b", "{x}", "\"q\"", "back\\slash\\", "\\\"", " lead and trail ", every_byte,
      "nöde-ä/GPU-ü", std::string(100000, '"'), std::string(50000, '\\') + std::string(50000, 'x'),
      R"({"accounts":[["k8s/pod-a","team \"a\"",1.5]],"charges":[["k8s/pod-a","busy",12]]})"};
  std::string text = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) text += ',';
    fleet::append_array_element(text, items[i]);
  }
  text += '}';
  fleet::PgResult r = admin_->query("SELECT x FROM unnest($1::text[]) WITH ORDINALITY u(x, n) ORDER BY n", {text});
  ASSERT_EQ(r.rows(), static_cast<int>(items.size()));
  for (int i = 0; i < r.rows(); ++i) {
    EXPECT_FALSE(r.null(i, 0)) << i;
    EXPECT_EQ(r.text(i, 0), items[static_cast<size_t>(i)]) << i;
  }
}

TEST_F(FleetDb, AnArrayTheServerSendsIsReadCellForCellWhateverItsBytes) {
  std::string every_byte;
  for (int b = 1; b < 128; ++b) every_byte += static_cast<char>(b);
  const std::vector<std::string> items = {"",
                                          "NULL",
                                          "null",
                                          "NuLl",
                                          "a,b",
                                          "{x}",
                                          "}",
                                          "\"q\"",
                                          "back\\slash\\",
                                          "\\\"",
                                          " lead and trail ",
                                          "tab\there",
                                          every_byte,
                                          "nöde-ä/GPU-ü",
                                          std::string(100000, '"'),
                                          "0.30000000000000004",
                                          "-Infinity",
                                          "NaN"};
  std::string text = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) text += ',';
    fleet::append_array_element(text, items[i]);
  }
  text += '}';
  // Each item in a row of three cells: it, a NULL, and its ordinal as text.
  fleet::PgResult r = admin_->query(
      "SELECT array_agg(ARRAY[x, NULL, n::text] ORDER BY n) FROM unnest($1::text[]) WITH ORDINALITY u(x, n)", {text});
  const fleet::TextArrayRows rows(r.view(0, 0));
  ASSERT_EQ(rows.rows(), static_cast<int>(items.size()));
  for (int i = 0; i < rows.rows(); ++i) {
    ASSERT_EQ(rows.columns(i), 3);
    EXPECT_FALSE(rows.null(i, 0)) << i;
    EXPECT_EQ(rows.text(i, 0), items[static_cast<size_t>(i)]) << i;
    EXPECT_TRUE(rows.null(i, 1)) << i;
    EXPECT_EQ(rows.i64(i, 2), i + 1);
  }
  EXPECT_EQ(rows.f64(static_cast<int>(items.size()) - 3, 0), 0.30000000000000004);
  EXPECT_EQ(rows.f64(static_cast<int>(items.size()) - 2, 0), -HUGE_VAL);
  EXPECT_FALSE(rows.opt_i64(0, 1).has_value());
  EXPECT_THROW((void)rows.view(0, 3), Error);
  // No rows: a SQL NULL (an aggregate of nothing) or an empty array.
  EXPECT_EQ(fleet::TextArrayRows("").rows(), 0);
  EXPECT_EQ(fleet::TextArrayRows("{}").rows(), 0);
  // What array_out never writes is refused, not guessed at.
  for (const char* bad : {"{", "{{a}", "{{a},{b,c}}", "{a}", "{{a,}}", "{{\"a}}", "{{a b}}", "{{a}}x", "{{a},}"})
    EXPECT_THROW(fleet::TextArrayRows{bad}, Error) << bad;
}

}  // namespace
}  // namespace gpuledger::testing
