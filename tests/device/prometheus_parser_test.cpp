#include <gtest/gtest.h>

#include <cmath>

#include "device/prometheus_parser.h"

namespace gpuledger::device {
namespace {

TEST(PrometheusParser, ReadsSamplesLabelsHelpAndType) {
  auto page = parse_prometheus_text(
      "# HELP m_total A counter\\nwith newline\n# TYPE m_total counter\nm_total{a=\"1\",b=\"x y\"} 42\nplain 1.5e3\n");
  EXPECT_EQ(page.error_count, 0u);
  ASSERT_EQ(page.samples.size(), 2u);
  EXPECT_EQ(page.samples[0].name, "m_total");
  ASSERT_EQ(page.samples[0].labels.size(), 2u);
  EXPECT_EQ(*page.samples[0].label("b"), "x y");
  EXPECT_EQ(page.samples[0].value, 42);
  EXPECT_EQ(page.samples[1].value, 1500);
  EXPECT_TRUE(page.samples[1].labels.empty());
  EXPECT_EQ(page.types["m_total"], "counter");
  EXPECT_EQ(page.help["m_total"], "A counter\nwith newline");
}

TEST(PrometheusParser, UnescapesLabelValues) {
  auto s = parse_sample_line(R"(m{v="a\"b\\c\nd"} 1)");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->label("v"), "a\"b\\c\nd");
}

TEST(PrometheusParser, SpecialFloatsAndTimestamps) {
  auto page = parse_prometheus_text("a NaN\nb +Inf\nc -Inf\nd 3 1700000000123\ne -0.5\nf 1e400\ng Inf\n");
  ASSERT_EQ(page.samples.size(), 7u) << (page.errors.empty() ? "" : page.errors[0].message);
  EXPECT_TRUE(std::isnan(page.samples[0].value));
  EXPECT_TRUE(std::isinf(page.samples[1].value) && page.samples[1].value > 0);
  EXPECT_TRUE(std::isinf(page.samples[2].value) && page.samples[2].value < 0);
  EXPECT_EQ(page.samples[3].timestamp_ms, 1700000000123);
  EXPECT_EQ(page.samples[4].value, -0.5);
  EXPECT_TRUE(std::isinf(page.samples[5].value));
  EXPECT_TRUE(std::isinf(page.samples[6].value));
}

TEST(PrometheusParser, ToleratesCrlfBlankLinesTrailingCommaAndSpaces) {
  auto page = parse_prometheus_text("\r\n  \r\n# just a comment\r\nm{ a = \"1\" , b=\"2\", } 7\r\n\n\tn 8\t\r\n");
  EXPECT_EQ(page.error_count, 0u);
  ASSERT_EQ(page.samples.size(), 2u);
  EXPECT_EQ(*page.samples[0].label("a"), "1");
  EXPECT_EQ(page.samples[0].value, 7);
  EXPECT_EQ(page.samples[1].value, 8);
}

TEST(PrometheusParser, RejectsBadLinesButKeepsTheRest) {
  const char* bad[] = {
      "m{a=\"1\"",                 // unterminated label set
      "m{a=\"1} 2",                // unterminated value
      "m{a=\"\\q\"} 1",            // invalid escape
      "m{a=\"1\",a=\"2\"} 1",      // duplicate label
      "m{1a=\"x\"} 1",             // bad label name
      "m{a=1} 1",                  // unquoted value
      "m 1 2 3",                   // junk after timestamp
      "m abc",                     // bad value
      "m 0x10",                    // hex is not the format
      "m nan(123)",                // C-style NaN payload
      "m",                         // no value
      "9m 1",                      // bad metric name
      "m 1 12.5",                  // fractional timestamp
      "m 1 99999999999999999999",  // timestamp overflow
      "m{a=\"x\"}1",               // no blank before value
  };
  for (const char* line : bad) {
    std::string error;
    EXPECT_FALSE(parse_sample_line(line, &error)) << line;
    EXPECT_FALSE(error.empty()) << line;
  }
  std::string page_text;
  for (const char* line : bad) page_text += std::string(line) + "\n";
  page_text += "good 1\n# TYPE x bogus\n";
  auto page = parse_prometheus_text(page_text);
  ASSERT_EQ(page.samples.size(), 1u);
  EXPECT_EQ(page.samples[0].name, "good");
  EXPECT_EQ(page.error_count, std::size(bad) + 1);
  EXPECT_EQ(page.errors[0].line, 1u);
}

TEST(PrometheusParser, KeepsBoundedErrorList) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "!!!\n";
  auto page = parse_prometheus_text(text);
  EXPECT_EQ(page.error_count, 1000u);
  EXPECT_EQ(page.errors.size(), ParsedPage::kMaxErrors);
}

}  // namespace
}  // namespace gpuledger::device
