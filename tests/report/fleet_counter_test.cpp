#include "report/fleet_counter.h"

#include <gtest/gtest.h>

namespace gpuledger::report {
namespace {

constexpr double kFrom = 1000;

TEST(FleetCounter, FromTheValueAtFrom) {
  CounterSummary s{.baseline = 10, .first = 10.5, .last = 12};
  EXPECT_DOUBLE_EQ(counter_increase(s, kFrom, {}).increase, 2);
  EXPECT_FALSE(counter_increase(s, kFrom, {}).history_unseen);
}

TEST(FleetCounter, LedgerThatBeganAfterFromCountsFromZero) {
  CounterSummary s{.first = 4, .last = 6};
  auto inc = counter_increase(s, kFrom, {.earliest = kFrom + 5, .latest = kFrom + 5});
  EXPECT_DOUBLE_EQ(inc.increase, 6);
  EXPECT_FALSE(inc.history_unseen);
}

TEST(FleetCounter, HistoryPrometheusNeverSawIsNotBilled) {
  CounterSummary s{.first = 100, .last = 100.5};
  auto inc = counter_increase(s, kFrom, {.earliest = kFrom - 86400, .latest = kFrom - 86400});
  EXPECT_DOUBLE_EQ(inc.increase, 0.5);
  EXPECT_TRUE(inc.history_unseen);
  EXPECT_DOUBLE_EQ(counter_increase(s, kFrom, {}).increase, 0.5);  // no first-window metric: the same, safely
}

TEST(FleetCounter, ANewLedgerAfterADropIsCounted) {
  CounterSummary s{.baseline = 1, .resets = 1, .samples = {{1001, 1}, {1002, 2}, {1003, 0.5}, {1004, 0.75}}};
  auto inc = counter_increase(s, kFrom, {.earliest = kFrom - 10, .latest = kFrom + 2.5});
  EXPECT_DOUBLE_EQ(inc.increase, 1 + 0.75);
  EXPECT_FALSE(inc.reset_unknown);
}

TEST(FleetCounter, ADropFromRetentionIsFlaggedNotBilled) {
  CounterSummary s{.baseline = 50, .resets = 1, .samples = {{1001, 51}, {1002, 40}, {1003, 41}}};
  auto inc = counter_increase(s, kFrom, {.earliest = kFrom - 10, .latest = kFrom - 10});
  EXPECT_DOUBLE_EQ(inc.increase, 1 + 1);
  EXPECT_TRUE(inc.reset_unknown);
}

}  // namespace
}  // namespace gpuledger::report
