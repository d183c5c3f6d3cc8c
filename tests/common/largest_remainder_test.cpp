#include "common/largest_remainder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace gpuledger {
namespace {

TEST(SettleRemainders, LargestRemaindersFirstAndTiesToTheEarlierPart) {
  std::vector<int64_t> units = {0, 0, 0, 0};
  settle_remainders(units, std::vector<int64_t>{5, 7, 7, 1}, 2, true);
  EXPECT_EQ(units, (std::vector<int64_t>{0, 1, 1, 0}));
  units = {0, 0, 0, 0};
  settle_remainders(units, std::vector<int64_t>{3, 3, 3, 3}, 3, true);
  EXPECT_EQ(units, (std::vector<int64_t>{1, 1, 1, 0}));  // a tie: by position
}

TEST(SettleRemainders, APartMarkedBelowZeroNeverGetsAUnit) {
  std::vector<int64_t> units = {0, 0, 0};
  settle_remainders(units, std::vector<long double>{-1.0L, 0.2L, 0.1L}, 5, true);
  EXPECT_EQ(units, (std::vector<int64_t>{0, 3, 2}));  // round after round, over the other two
}

TEST(SettleRemainders, NothingToGiveToStopsInsteadOfLooping) {
  std::vector<int64_t> units = {4, 4};
  settle_remainders(units, std::vector<long double>{-1.0L, -1.0L}, 3, true);
  EXPECT_EQ(units, (std::vector<int64_t>{4, 4}));
  units = {0, 0};
  settle_remainders(units, std::vector<int64_t>{1, 2}, -3, true);
  EXPECT_EQ(units, (std::vector<int64_t>{0, 0}));
}

TEST(SettleRemainders, TakesBackFromTheSmallestRemaindersFirst) {
  std::vector<int64_t> units = {2, 1, 0};
  settle_remainders(units, std::vector<int64_t>{9, 5, 1}, -2, true);
  EXPECT_EQ(units, (std::vector<int64_t>{1, 0, 0}));  // the part at 0 is passed over
  units = {2, 1, 0};
  settle_remainders(units, std::vector<int64_t>{9, 5, 1}, -4, false);
  EXPECT_EQ(units, (std::vector<int64_t>{1, 0, -2}));  // may go below 0: 0, 1, 2, then 0 again
}

TEST(Apportion, ExactAndSumsToTheTotal) {
  EXPECT_EQ(apportion(10, {1, 1, 1}), (std::vector<uint64_t>{4, 3, 3}));
  EXPECT_EQ(apportion(7, {0, 2, 5}), (std::vector<uint64_t>{0, 2, 5}));
  EXPECT_EQ(apportion(5, {0, 3, 3, 0}), (std::vector<uint64_t>{0, 3, 2, 0}));  // the weight 0 parts get nothing
  EXPECT_EQ(apportion(9, {0, 0}), (std::vector<uint64_t>{0, 0}));
  EXPECT_TRUE(apportion(9, {}).empty());
}

TEST(Apportion, HugeCountsDoNotOverflow) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const auto parts = apportion(max, {max, max, 1});
  EXPECT_EQ(parts[0] + parts[1] + parts[2], max);
  // Exact shares: just under max/2 + 0.5 each, and just under 0.5: the last has the largest remainder.
  EXPECT_EQ(parts, (std::vector<uint64_t>{max / 2, max / 2, 1}));
}

}  // namespace
}  // namespace gpuledger
