// Issue 31, the rate is the rate: a GPU's cost over a whole hour is its price x
// the hours to the micro-unit, whatever window_seconds is, across a restart
// and a roll-up (rate_remainder.h).
#include "ledger/rate_remainder.h"

#include <gtest/gtest.h>

#include "ledger/accountant.h"
#include "ledger/store.h"
#include "ledger_dir_test.h"
#include "ledger_fixture.h"

namespace gpuledger::ledger {
namespace {

using testing::kT0;

int64_t hour_of_windows(RateRemainders& carry, const SlotPrice& price, int64_t window_seconds) {
  int64_t sum = 0;
  for (int64_t t = 0; t < 3600; t += window_seconds) sum += carry.window_cost("GPU-a", price, window_seconds);
  return sum;
}

TEST(RateRemainder, AnHourOfAnyWindowsIsTheRate) {
  const SlotPrice a100{2'000'000, 1, 1, "model:A100"}, h100{4'100'000, 1, 1, "model:H100"}, t4{350'000, 1, 1, ""};
  // What each window rounded on its own made of them (the 2.000160, 4.099680 at 60 s... per hour):
  EXPECT_EQ(window_cost_micros(a100, 5) * 720, 2'000'160);
  EXPECT_EQ(window_cost_micros(h100, 60) * 60, 4'099'980);
  for (int64_t seconds : {1, 5, 10, 60, 300, 3600}) {
    RateRemainders carry;
    EXPECT_EQ(hour_of_windows(carry, a100, seconds), 2'000'000) << seconds;
    EXPECT_EQ(hour_of_windows(carry, h100, seconds), 4'100'000) << seconds;
    EXPECT_EQ(hour_of_windows(carry, t4, seconds), 350'000) << seconds;
    for (int h = 0; h < 24 * 31; ++h) ASSERT_EQ(hour_of_windows(carry, a100, seconds), 2'000'000) << "hour " << h;
  }
  // A scaled MIG price (3 of 7 slices): the hour's exact cost rounded once, 4.10 x 3/7 = 1.757142857...
  RateRemainders mig;
  EXPECT_EQ(hour_of_windows(mig, {4'100'000, 3, 7, "model:H100"}, 5), 1'757'143);
  EXPECT_EQ(hour_of_windows(mig, {4'100'000, 3, 7, "model:H100"}, 5) + hour_of_windows(mig, {4'100'000, 3, 7, ""}, 5),
            8'200'000 * 3 / 7 + 1);  // two hours: 3.514285714... -> 3.514286
}

TEST(RateRemainder, TheCarryIsStoredAndAnUnreadableOneIsNone) {
  const SlotPrice a100{2'000'000, 1, 1, ""};
  RateRemainders carry;
  int64_t sum = 0;
  for (int i = 0; i < 300; ++i) sum += carry.window_cost("GPU-a", a100, 5);
  RateRemainders again = RateRemainders::decode(carry.encode());
  for (int i = 300; i < 720; ++i) sum += again.window_cost("GPU-a", a100, 5);
  EXPECT_EQ(sum, 2'000'000);
  // Whatever is in the meta table: no throw, and no carry taken that a price could not have left.
  for (const char* bad : {"", "null", "[1,2]", "{\"GPU-a\":[7200,7200]}", "{\"GPU-a\":[-1,3600]}",
                          "{\"GPU-a\":[1,0]}", "{\"GPU-a\":\"x\"}", "{\"GPU-a\":[1,99999999999999999]}"}) {
    RateRemainders none = RateRemainders::decode(bad);
    EXPECT_EQ(none.encode(), "{}") << bad;
    EXPECT_EQ(none.window_cost("GPU-a", a100, 5), 2778) << bad;  // a fresh slot: half up, as before
  }
}

class RateLedger : public testing::LedgerDirTest {
 protected:
  RateLedger() : LedgerDirTest("gl_rate_") {}
  static Observation at(int64_t t) {
    Observation o;
    o.time = static_cast<double>(kT0 + t);
    o.slots = {{"GPU-a", "NVIDIA A100-SXM4-80GB", std::nullopt, ""}};
    return o;
  }
  static int64_t cost(const Store& store, int64_t from, int64_t to) {
    int64_t sum = 0;
    for (const auto& w : store.windows(kT0 + from, kT0 + to)) sum += w.cost_micros;
    return sum;
  }
};

const char* kFiveSeconds = "currency: EUR\ndefault_per_hour: 2.00\nwindow_seconds: 5\n";

// The test: 5 s windows at 2.00/h for 3600 s cost exactly 2.000000, with a restart every minute (each
// minute rounded on its own would be 0.033333, 1.999980 an hour: the carry comes from the store), then a
// roll-up of the first hour before the second.
TEST_F(RateLedger, FiveSecondWindowsAtTwoAnHourCostTwoAnHourAcrossRestartsAndARollUp) {
  for (int64_t minute = 0; minute < 60; ++minute) {
    Store store(db());
    Accountant acc(store, parse_prices(kFiveSeconds));
    for (int64_t t = 60 * minute; t <= 60 * minute + 60; t += 5) acc.observe(at(t));
  }
  {
    Store store(db());
    EXPECT_EQ(store.windows(kT0, kT0 + 3600).size(), 720u);
    EXPECT_EQ(cost(store, 0, 3600), 2'000'000);
    EXPECT_EQ(cost(store, 0, 1800), 1'000'000);
    EXPECT_EQ(store.roll_up_before(kT0 + 3600), 720 - 1);
    EXPECT_EQ(cost(store, 0, 3600), 2'000'000);
  }
  {
    Store store(db());
    Accountant acc(store, parse_prices(kFiveSeconds));
    for (int64_t t = 3600; t <= 7200; t += 5) acc.observe(at(t));
    EXPECT_EQ(cost(store, 3600, 7200), 2'000'000);
    EXPECT_EQ(cost(store, 0, 7200), 4'000'000);
  }
}

// A store written before the carry keeps its windows as they were billed.
TEST_F(RateLedger, AStoreFromBeforeKeepsItsHistory) {
  {
    Store store(db());
    WindowRecord w;
    w.start = kT0;
    w.end = kT0 + 5;
    w.slot = {"GPU-a", "NVIDIA A100-SXM4-80GB", std::nullopt, ""};
    w.cost_micros = w.idle_micros = 2778;  // rounded on its own
    w.charges = {{"__idle__", ChargeKind::kIdle, 2778}};
    ASSERT_TRUE(store.insert_window(w));
  }
  Store store(db());
  Accountant acc(store, parse_prices(kFiveSeconds));
  for (int64_t t = 5; t <= 3600; t += 5) acc.observe(at(t));
  EXPECT_EQ(store.windows(kT0, kT0 + 5).front().cost_micros, 2778);
  EXPECT_EQ(cost(store, 5, 3600), 1'997'222) << "the rest: 719 windows of 1/720 hour, rounded once";
}

}  // namespace
}  // namespace gpuledger::ledger
