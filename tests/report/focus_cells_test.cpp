// The FOCUS writer's cells (focus_cells.h) are byte for byte what the general
// functions make of the same text: printable ASCII through the fast path,
// everything else (hostile names: controls, bidi, invalid UTF-8, formulas,
// quotes) through the general one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/inert_text.h"
#include "report/focus_cells.h"
#include "report/focus_decimal.h"
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
  std::vector<double> values = {0.0,   -0.0,         1.0,      0.5,      1.0 / 3.0, 0.333333333333, 123456.123456789,
                                1e-9,  2.5e21,       1e-5,     1e-4,     1e15,      1e16,           1e17,
                                -7.25, std::nan(""), HUGE_VAL, -HUGE_VAL};
  std::mt19937_64 rng(20261207);
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    values.push_back(i % 2 ? v : std::stod(fixed(static_cast<double>(rng() % 1000000007) / 1e6, 12)));
  }
  for (double v : values) {
    std::string out = "x";
    append_json_number(out, v);
    ASSERT_EQ(out, "x" + nlohmann::json(v).dump()) << v;
  }
}

// scaled_decimal as it was written first (digits prepended to a string).
std::string scaled_decimal_reference(__int128 value, int scale) {
  const bool negative = value < 0;
  unsigned __int128 v = negative ? static_cast<unsigned __int128>(-value) : static_cast<unsigned __int128>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  if (static_cast<int>(digits.size()) <= scale) digits.insert(0, static_cast<size_t>(scale + 1) - digits.size(), '0');
  std::string out = digits.substr(0, digits.size() - static_cast<size_t>(scale));
  std::string frac = digits.substr(digits.size() - static_cast<size_t>(scale));
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  if (!frac.empty()) out += "." + frac;
  return (negative && out != "0" ? "-" : "") + out;
}

TEST(FocusCells, DecimalsAreWhatTheyWereByteForByte) {
  std::mt19937_64 rng(20261204);
  for (int i = 0; i < 200000; ++i) {
    const int scale = static_cast<int>(rng() % 16);
    __int128 v = static_cast<__int128>(rng() >> (rng() % 64));
    if (i % 7 == 0) v *= static_cast<__int128>(rng() >> 20);  // past int64 (micro-units x nano-units)
    if (i % 3 == 0) v = -v;
    ASSERT_EQ(scaled_decimal(v, scale), scaled_decimal_reference(v, scale)) << static_cast<long long>(v) << " " << scale;
  }
  // Where the digits are cut into 64-bit parts (2^64, 10^19, 10^38) and the largest value.
  const unsigned __int128 u64 = static_cast<unsigned __int128>(UINT64_MAX);
  const unsigned __int128 p19 = static_cast<unsigned __int128>(10'000'000'000'000'000'000ULL);
  for (unsigned __int128 edge : {u64, u64 + 1, p19, p19 * p19, (static_cast<unsigned __int128>(1) << 127) - 1})
    for (__int128 d = -2; d <= 2; ++d)
      for (int scale : {0, 9, 15, 19, kMaxScale}) {
        const __int128 v = static_cast<__int128>(edge - 2) + d;
        ASSERT_EQ(scaled_decimal(v, scale), scaled_decimal_reference(v, scale));
        ASSERT_EQ(scaled_decimal(-v, scale), scaled_decimal_reference(-v, scale));
      }
  EXPECT_EQ(scaled_decimal(static_cast<__int128>(p19), 19), "1");
  EXPECT_EQ(scaled_decimal(static_cast<__int128>(p19 * p19) + 5, 38 - 8), "100000000.000000000000000000000000000005");
  EXPECT_EQ(scaled_decimal(0, 9), "0");
  EXPECT_EQ(scaled_decimal(-20, 2), "-0.2");
  EXPECT_EQ(scaled_decimal(1500, 3), "1.5");
  EXPECT_THROW(scaled_decimal(1, kMaxScale + 1), std::invalid_argument);
  // fixed() is printf's %.*f, by std::to_chars.
  char buf[64];
  for (int i = 0; i < 200000; ++i) {
    const int places = static_cast<int>(rng() % 13);
    const double v = (static_cast<double>(rng() % 100000000) / static_cast<double>(1 + rng() % 1000000)) *
                     (i % 5 == 0 ? -1.0 : 1.0) * (i % 11 == 0 ? 1e12 : 1.0);
    std::snprintf(buf, sizeof buf, "%.*f", places, v);
    ASSERT_EQ(fixed(v, places), buf) << v << " " << places;
  }
  for (double v : {0.5, 1.5, 2.5, 0.125, -0.0, 1e300, -1e300}) {
    std::snprintf(buf, sizeof buf, "%.*f", 2, v);
    EXPECT_EQ(fixed(v, 2), buf) << v;
  }
}

}  // namespace
}  // namespace gpuledger::report
