// Tests for export/prometheus_text.h: byte-exact exposition output, escaping,
// and float formatting.
#include "metrics/prometheus_text.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace gpuledger::metrics {
namespace {

TEST(ExpositionWriter, EmptyWriterProducesEmptyText) {
  ExpositionWriter w;
  EXPECT_EQ(w.text(), "");
}

TEST(ExpositionWriter, CounterFamilyWithLabelsIsByteExact) {
  ExpositionWriter w;
  w.family("demo_requests_total", MetricType::kCounter, "Requests served.");
  w.sample({{"method", "get"}, {"code", "200"}}, uint64_t{42});
  w.sample({{"method", "post"}, {"code", "500"}}, uint64_t{0});
  EXPECT_EQ(w.text(),
            "# HELP demo_requests_total Requests served.\n"
            "# TYPE demo_requests_total counter\n"
            "demo_requests_total{method=\"get\",code=\"200\"} 42\n"
            "demo_requests_total{method=\"post\",code=\"500\"} 0\n");
}

TEST(ExpositionWriter, GaugeDoubleAndUnlabelledSamplesAreByteExact) {
  ExpositionWriter w;
  w.family("demo_temperature", MetricType::kGauge, "A temperature.");
  w.sample({}, 1.5);
  w.sample({{"room", "a"}}, -0.25);
  w.family("demo_max", MetricType::kGauge, "Largest uint64.");
  w.sample({}, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(w.text(),
            "# HELP demo_temperature A temperature.\n"
            "# TYPE demo_temperature gauge\n"
            "demo_temperature 1.5\n"
            "demo_temperature{room=\"a\"} -0.25\n"
            "# HELP demo_max Largest uint64.\n"
            "# TYPE demo_max gauge\n"
            "demo_max 18446744073709551615\n");
}

TEST(ExpositionWriter, FamilyWithoutSamplesStillWritesHelpAndType) {
  ExpositionWriter w;
  w.family("a_total", MetricType::kCounter, "A.");
  w.family("b", MetricType::kGauge, "B.");
  w.sample({}, uint64_t{1});
  EXPECT_EQ(w.text(),
            "# HELP a_total A.\n"
            "# TYPE a_total counter\n"
            "# HELP b B.\n"
            "# TYPE b gauge\n"
            "b 1\n");
}

TEST(ExpositionWriter, LabelValuesAreEscapedInSamples) {
  ExpositionWriter w;
  w.family("m", MetricType::kGauge, "h");
  w.sample({{"v", "a\\b\"c\nd"}}, uint64_t{1});
  EXPECT_EQ(w.text(),
            "# HELP m h\n"
            "# TYPE m gauge\n"
            "m{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(ExpositionWriter, HelpIsEscapedButQuotesAreNot) {
  ExpositionWriter w;
  w.family("m", MetricType::kCounter, "line1\nback\\slash \"quoted\"");
  EXPECT_EQ(w.text(),
            "# HELP m line1\\nback\\\\slash \"quoted\"\n"
            "# TYPE m counter\n");
}

TEST(EscapeLabelValue, EscapesBackslashQuoteNewline) {
  EXPECT_EQ(escape_label_value(""), "");
  EXPECT_EQ(escape_label_value("plain"), "plain");
  EXPECT_EQ(escape_label_value("\\"), "\\\\");
  EXPECT_EQ(escape_label_value("\""), "\\\"");
  EXPECT_EQ(escape_label_value("\n"), "\\n");
  EXPECT_EQ(escape_label_value("a\\\"\nb"), "a\\\\\\\"\\nb");
}

TEST(EscapeLabelValue, LeavesOtherBytesUnchanged) {
  // Tab, carriage return, single quote, braces, '=' and ',' are legal raw.
  EXPECT_EQ(escape_label_value("\t\r'{}=,#"), "\t\r'{}=,#");
  // UTF-8 passes through byte for byte.
  const std::string utf8 = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x9A\x80";
  EXPECT_EQ(escape_label_value(utf8), utf8);
  // Embedded NUL is legal UTF-8 and not touched; a byte that is not UTF-8
  // becomes U+FFFD (Prometheus rejects the whole page over one such label).
  const std::string bytes("a\0\xff", 3);
  EXPECT_EQ(escape_label_value(bytes), std::string("a\0\xEF\xBF\xBD", 5));
}

TEST(EscapeHelp, EscapesBackslashAndNewlineOnly) {
  EXPECT_EQ(escape_help(""), "");
  EXPECT_EQ(escape_help("a\\b"), "a\\\\b");
  EXPECT_EQ(escape_help("a\nb"), "a\\nb");
  EXPECT_EQ(escape_help("\"q\""), "\"q\"");
  const std::string utf8 = "\xC3\xA9\t";
  EXPECT_EQ(escape_help(utf8), utf8);
}

TEST(FormatDouble, FormatsAsTheTextFormatExpects) {
  EXPECT_EQ(format_double(0.0), "0");
  EXPECT_EQ(format_double(1.0), "1");
  EXPECT_EQ(format_double(1.5), "1.5");
  EXPECT_EQ(format_double(-2.5), "-2.5");
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1e-9), "1e-09");
  EXPECT_EQ(format_double(1e20), "1e+20");
  EXPECT_EQ(format_double(123456789.0), "123456789");
  EXPECT_EQ(format_double(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_double(-std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_double(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_double(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(FormatDouble, RoundTrips) {
  for (double v : {1e-9, 1e20, 0.1, 1.0 / 3.0, 1.7976931348623157e308, 5e-324, 1.5e9}) {
    const std::string text = format_double(v);
    double back = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), back);
    EXPECT_EQ(ec, std::errc{}) << text;
    EXPECT_EQ(end, text.data() + text.size()) << text;
    EXPECT_EQ(back, v) << text;
  }
}

TEST(ContentType, IsTextFormat004) {
  EXPECT_EQ(kPrometheusContentType, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace
}  // namespace gpuledger::metrics
