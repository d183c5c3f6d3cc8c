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

namespace gpuledger {
namespace {

// Issue 31: coverage said "1796192715s before the agent started".
TEST(DurationWords, TwoLargestUnits) {
  EXPECT_EQ(duration_words(0), "0s");
  EXPECT_EQ(duration_words(45), "45s");
  EXPECT_EQ(duration_words(90), "1m 30s");
  EXPECT_EQ(duration_words(960), "16m");
  EXPECT_EQ(duration_words(3600), "1h");
  EXPECT_EQ(duration_words(3 * 86400 + 4 * 3600 + 59), "3d 4h");
  EXPECT_EQ(duration_words(86400 + 30), "1d");  // under an hour past a day: the day
  EXPECT_EQ(duration_words(1796192715), "20789d 6h");
}

}  // namespace
}  // namespace gpuledger
