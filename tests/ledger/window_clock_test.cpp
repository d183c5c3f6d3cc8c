// The window clock alone (window_clock.h): which windows an observation
// closes, their source and watched seconds, backfill and a graceful stop.
#include "ledger/window_clock.h"

#include <gtest/gtest.h>

namespace gpuledger::ledger {
namespace {

using Closing = WindowClock::Closing;

// What the accountant does with an observation after the first: every window
// it closes (written or not), then the observation is taken in.
std::vector<Closing> observe(WindowClock& clock, double t) {
  std::vector<Closing> out;
  if (clock.went_back(t)) return out;
  bool watched = true;
  while (const auto w = clock.next_closed_by(t, watched)) {
    out.push_back(*w);
    clock.closed(*w);
    watched = false;
  }
  clock.seen(t);
  return out;
}

TEST(WindowClock, AWindowClosesAtTheFirstObservationAtOrAfterItsEnd) {
  WindowClock clock(60, 86400, std::nullopt);
  EXPECT_FALSE(clock.started());
  EXPECT_TRUE(clock.backfill_before(125).empty());
  clock.open(125);
  EXPECT_TRUE(clock.started());
  EXPECT_TRUE(observe(clock, 170).empty());
  // Started within it: partial, watched from the first observation.
  EXPECT_EQ(observe(clock, 180), (std::vector<Closing>{{120, 180, 170, 55, "partial", true}}));
  EXPECT_EQ(observe(clock, 240), (std::vector<Closing>{{180, 240, 180, 60, "live", true}}));
  EXPECT_EQ(clock.first_time(), 125);
  EXPECT_EQ(clock.last_time(), 240);
}

// The agent stalled: the windows without an observation inside are gaps.
TEST(WindowClock, WindowsWithoutAnObservationInsideAreGaps) {
  WindowClock clock(60, 86400, std::nullopt);
  clock.open(120);
  EXPECT_EQ(observe(clock, 310), (std::vector<Closing>{{120, 180, 120, 60, "live", true},
                                                       {180, 240, 180, 0, "gap", true},
                                                       {240, 300, 240, 0, "gap", true}}));
  EXPECT_EQ(clock.last_time(), 310);
}

TEST(WindowClock, AnObservationBeforeTheLastIsIgnored) {
  WindowClock clock(60, 86400, std::nullopt);
  clock.open(130);
  EXPECT_TRUE(clock.went_back(129.5));
  EXPECT_FALSE(clock.went_back(130));
  EXPECT_TRUE(observe(clock, 100).empty());
  EXPECT_EQ(clock.last_time(), 130);
}

// The agent was down: the whole windows since the store's last are backfilled,
// at most max_backfill_seconds of them.
TEST(WindowClock, DowntimeIsBackfilledUpToTheLimit) {
  EXPECT_EQ(WindowClock(60, 86400, 60).backfill_before(250), (std::vector<int64_t>{60, 120, 180}));
  EXPECT_EQ(WindowClock(60, 86400, 90).backfill_before(250), (std::vector<int64_t>{120, 180}));
  EXPECT_EQ(WindowClock(60, 100, 60).backfill_before(250), (std::vector<int64_t>{180}));
  EXPECT_TRUE(WindowClock(60, 30, 60).backfill_before(250).empty());
  EXPECT_TRUE(WindowClock(60, 86400, 240).backfill_before(250).empty());
}

// An agent stopped within the window (and stored it): the restarted one does
// not write it again.
TEST(WindowClock, AWindowTheStoreHasIsNotWrittenAgain) {
  WindowClock clock(60, 86400, 300);
  EXPECT_TRUE(clock.backfill_before(250).empty());
  clock.open(250);
  EXPECT_FALSE(clock.in_progress());
  EXPECT_EQ(observe(clock, 305), (std::vector<Closing>{{240, 300, 250, 50, "partial", false}}));
  EXPECT_EQ(clock.in_progress(), (Closing{300, 360, 300, 5, "partial", true}));
}

// A graceful stop writes the window in progress once, with what was seen of it.
TEST(WindowClock, AGracefulStopStoresTheWindowInProgressOnce) {
  WindowClock clock(60, 86400, std::nullopt);
  EXPECT_FALSE(clock.in_progress());
  clock.open(130);
  observe(clock, 150);
  const auto w = clock.in_progress();
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, (Closing{120, 180, 130, 20, "partial", true}));
  clock.stored(*w);
  EXPECT_FALSE(clock.in_progress());
  EXPECT_EQ(observe(clock, 185), (std::vector<Closing>{{120, 180, 150, 50, "partial", false}}));
}

}  // namespace
}  // namespace gpuledger::ledger
