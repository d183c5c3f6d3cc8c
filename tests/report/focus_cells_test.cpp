// The FOCUS writer's cells (focus_cells.h) are byte for byte what the general
// functions make of the same text: printable ASCII through the fast path,
// everything else (hostile names: controls, bidi, invalid UTF-8, formulas,
// quotes) through the general one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "common/inert_text.h"
#include "report/focus_cells.h"
#include "report/report_text.h"

namespace gpuledger::report {
namespace {

std::string text_cell(std::string_view v) {
  std::string out = "x";  // appended after what is there
  append_text_cell(out, v);
  return out.substr(1);
}
std::string csv_cell(std::string_view v) {
  std::string out = "x";
  append_csv_cell(out, v);
  return out.substr(1);
}
std::string json_string(std::string_view v) {
  std::string out = "x";
  append_json_string(out, v);
  return out.substr(1);
}
std::string nlohmann_string(std::string_view v) {
  return nlohmann::json(std::string(v)).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

void expect_same(std::string_view v) {
  EXPECT_EQ(text_cell(v), csv_field(spreadsheet_text(v))) << ::testing::PrintToString(std::string(v));
  EXPECT_EQ(csv_cell(v), csv_field(std::string(v))) << ::testing::PrintToString(std::string(v));
  EXPECT_EQ(json_string(v), nlohmann_string(v)) << ::testing::PrintToString(std::string(v));
}

TEST(FocusCells, HostileTextIsWhatTheGeneralFunctionsMake) {
  const std::vector<std::string> texts = {
      "", "team-a", "ml/train-0", "a,b", "say \"hi\"", "=HYPERLINK(\"x\")", "+1", "-1", "@SUM(A1)", "\t=1",
      "back\\slash", "line\nbreak", "cr\rx", "\x7f", "caf\xc3\xa9", "\xe2\x80\xae" "evil", "\xff\xfe", "\xc3",
      "a\xed\xa0\x80" "b", "\xf0\x9f\x98\x80", "\x01\x1f", "{\"json\":1}", " leading space", "trailing,",
      std::string("nul\0in", 6)};
  for (const auto& t : texts) expect_same(t);
}

TEST(FocusCells, RandomBytesAreWhatTheGeneralFunctionsMake) {
  std::mt19937 rng(20261204);
  // Mostly printable ASCII, with the characters each path tests and UTF-8 lead and continuation bytes.
  const std::string alphabet = std::string("abcXYZ09 -_/.:,\"\\=+@\t\r\n\x7f\x01") + "\xc3\xa9\xe2\x80\xae\xf0\x9f\xff";
  for (int i = 0; i < 20000; ++i) {
    std::string t(rng() % 24, ' ');
    const bool ascii_only = i % 2 == 0;
    for (char& c : t)
      c = ascii_only ? static_cast<char>(0x20 + rng() % 95) : alphabet[rng() % alphabet.size()];
    expect_same(t);
    if (HasFailure()) return;
  }
}

TEST(FocusCells, NumbersAreNlohmannsShortestForm) {
  for (double v : {0.0, 1.0, 0.5, 1.0 / 3.0, 0.333333333333, 123456.123456789, 1e-9, 2.5e21}) {
    std::string out;
    append_json_number(out, v);
    EXPECT_EQ(out, nlohmann::json(v).dump());
  }
}

}  // namespace
}  // namespace gpuledger::report
