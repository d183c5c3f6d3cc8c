#include "common/duration_text.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace gpuledger {
namespace {

using namespace std::chrono_literals;

TEST(DurationText, UnitsOperatorsWrite) {
  EXPECT_EQ(parse_duration("10m"), 600'000ms);
  EXPECT_EQ(parse_duration("90s"), 90'000ms);
  EXPECT_EQ(parse_duration("90"), 90'000ms);
  EXPECT_EQ(parse_duration("1h"), 3'600'000ms);
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("0s"), 0ms);
  for (const char* bad : {"", "m", "-1s", "1.5m", "10 m", "10d", "1234567890s"})
    EXPECT_THROW(parse_duration(bad), Error) << bad;
}

}  // namespace
}  // namespace gpuledger
