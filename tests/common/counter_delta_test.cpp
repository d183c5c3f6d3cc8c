#include "common/counter_delta.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace gpuledger {
namespace {

TEST(CounterDelta, GrowthSinceTheLastReading) {
  const auto d = counter_delta<uint64_t>(40, 100);
  EXPECT_EQ(d.delta, 60u);
  EXPECT_FALSE(d.reset);
  const auto same = counter_delta<uint64_t>(100, 100);
  EXPECT_EQ(same.delta, 0u);
  EXPECT_FALSE(same.reset);
}

TEST(CounterDelta, ACounterThatDropsWasResetAndCountsFromZero) {
  const auto d = counter_delta<uint64_t>(1000, 7);
  EXPECT_EQ(d.delta, 7u);  // all of the new value, never a wrapped 2^64 - 993
  EXPECT_TRUE(d.reset);
  const auto zero = counter_delta<uint64_t>(std::numeric_limits<uint64_t>::max(), 0);
  EXPECT_EQ(zero.delta, 0u);
  EXPECT_TRUE(zero.reset);
}

TEST(CounterDelta, SecondsAlike) {
  const auto d = counter_delta(2.5, 4.0);
  EXPECT_EQ(d.delta, 1.5);
  EXPECT_FALSE(d.reset);
  const auto r = counter_delta(4.0, 0.25);
  EXPECT_EQ(r.delta, 0.25);
  EXPECT_TRUE(r.reset);
  static_assert(counter_delta(3, 5).delta == 2 && !counter_delta(3, 5).reset);
}

}  // namespace
}  // namespace gpuledger
