#include "common/micros_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "common/error.h"

namespace gpuledger {
namespace {

TEST(MicrosText, ParsesDecimalsExactly) {
  EXPECT_EQ(parse_micros("0.000001"), 1);
  EXPECT_EQ(parse_micros("12"), 12'000'000);
  EXPECT_EQ(parse_micros("1."), 1'000'000);
  EXPECT_EQ(parse_micros("4.10"), 4'100'000);
  EXPECT_EQ(parse_micros(".5"), 500'000);
}

TEST(MicrosText, RefusesWhatIsNotAnAmount) {
  EXPECT_THROW(parse_micros("-1"), Error);
  EXPECT_THROW(parse_micros("1.0000001"), Error);
  EXPECT_THROW(parse_micros("1e3"), Error);
  EXPECT_THROW(parse_micros(""), Error);
  EXPECT_THROW(parse_micros("."), Error);
  EXPECT_THROW(parse_micros("99999999999999999999"), Error);
}

TEST(MicrosText, FormatsSixDecimals) {
  EXPECT_EQ(format_micros(4'100'000), "4.100000");
  EXPECT_EQ(format_micros(0), "0.000000");
  EXPECT_EQ(format_micros(-5), "-0.000005");
  EXPECT_EQ(format_micros(std::numeric_limits<int64_t>::min()), "-9223372036854.775808");
  EXPECT_EQ(format_micros(std::numeric_limits<int64_t>::max()), "9223372036854.775807");
}

}  // namespace
}  // namespace gpuledger
