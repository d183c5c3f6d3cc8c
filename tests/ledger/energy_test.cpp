#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "ledger/energy_meter.h"
#include "ledger/energy_split.h"
#include "ledger/hourly_rollup.h"

namespace gpuledger::ledger {
namespace {

using K = ChargeKind;
using S = EnergySource;

EnergyReading counter(double t, double joules, S source = S::kNvml, std::optional<double> watts = std::nullopt) {
  return {t, joules, source, watts};
}
EnergyReading power(double t, std::optional<double> watts) { return {t, std::nullopt, S::kNvml, watts}; }

TEST(EnergyMeter, CounterGrowthInMillijoules) {
  EnergyMeter m;
  m.observe("g", counter(100, 5000.0, S::kDcgm));
  m.observe("g", counter(130, 5000.0 + 9000.5, S::kDcgm));
  m.observe("g", counter(160, 5000.0 + 18000.25, S::kDcgm));
  auto e = m.take("g", 160);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->millijoules, 18'000'250);
  EXPECT_EQ(e->source, S::kDcgm);
  EXPECT_FALSE(m.take("g", 220));  // nothing accrued since
}

TEST(EnergyMeter, NoSourceIsUnknownNotZero) {
  EnergyMeter m;
  m.observe("g", power(0, std::nullopt));
  m.observe("g", power(60, std::nullopt));
  EXPECT_FALSE(m.take("g", 60));
  EXPECT_FALSE(m.take("never-seen", 60));
}

TEST(EnergyMeter, PowerIntegratedByTrapezoid) {
  EnergyMeter m;
  m.observe("g", power(0, 100));
  m.observe("g", power(10, 300));  // (100+300)/2 * 10 = 2000 J
  m.observe("g", power(20, std::nullopt));  // known end held: 300 * 10 = 3000 J
  auto e = m.take("g", 20);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->millijoules, 5'000'000);
  EXPECT_EQ(e->source, S::kPowerIntegrated);
}

TEST(EnergyMeter, CounterResetFallsBackToPowerAndLabelsTheWindow) {
  EnergyMeter m;
  m.observe("g", counter(0, 1000, S::kNvml, 200));
  m.observe("g", counter(10, 3000, S::kNvml, 200));  // +2000 J by counter
  m.observe("g", counter(20, 5, S::kNvml, 200));     // reset: 200 W * 10 s = 2000 J integrated
  auto e = m.take("g", 20);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->millijoules, 4'000'000);
  EXPECT_EQ(e->source, S::kPowerIntegrated);
  m.observe("g", counter(30, 105, S::kNvml, 200));  // counter again: +100 J
  e = m.take("g", 30);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->millijoules, 100'000);
  EXPECT_EQ(e->source, S::kNvml);
}

TEST(EnergyMeter, FractionsCarryAcrossWindowsWithoutDrift) {
  EnergyMeter m;
  m.observe("g", power(0, 0.0001));
  int64_t sum = 0;
  for (int i = 1; i <= 1000; ++i) {
    m.observe("g", power(i, 0.0001));  // 0.1 mJ per second
    sum += m.take("g", i)->millijoules;
  }
  EXPECT_EQ(sum, 100);  // 1000 s * 0.1 mJ, handed out whole
}

TEST(EnergyMeter, OutOfOrderAndNonFiniteReadingsAreIgnored) {
  EnergyMeter m;
  m.observe("g", counter(10, 100));
  m.observe("g", counter(5, 0));
  m.observe("g", counter(std::nan(""), 0));
  m.observe("g", counter(20, 101));
  EXPECT_EQ(m.take("g", 20)->millijoules, 1000);
}

TEST(EnergyMeter, IntervalsCrossingAWindowEndAreSplitByTime) {
  EnergyMeter m;
  m.observe("g", counter(55, 0, S::kDcgm));
  m.observe("g", counter(63, 800, S::kDcgm));  // 100 J/s: 500 J before 60, 300 J after
  auto e = m.take("g", 60);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->millijoules, 500'000);
  EXPECT_EQ(e->source, S::kDcgm);
  m.observe("g", counter(120, 6500, S::kDcgm));
  EXPECT_EQ(m.take("g", 120)->millijoules, 6'000'000);  // 300 J carried + 5700 J
  // A stalled agent: one interval over three windows is spread over them.
  m.observe("g", counter(300, 6500 + 18000, S::kDcgm));
  int64_t sum = 0;
  for (double end : {180.0, 240.0, 300.0}) {
    auto w = m.take("g", end);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->millijoules, 6'000'000) << end;
    sum += w->millijoules;
  }
  EXPECT_EQ(sum, 18'000'000);
  EXPECT_FALSE(m.take("g", 360));
}

TEST(EnergySplit, FollowsTheCostSplitAndIdlePolicy) {
  WindowInput w{.window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", Activity{30, 0, 1}}, {"b", Activity{10, 0, 1}}}, .device_busy_fraction = 0.6};
  auto s = split_window_energy(w, {18'000'001, S::kNvml});
  EXPECT_EQ(s.busy_millijoules, 10'800'001);
  EXPECT_EQ(s.idle_millijoules, 7'200'000);
  EXPECT_EQ(s.source, S::kNvml);
  std::vector<EnergyCharge> want{{"a", K::kBusy, 8'100'001}, {"a", K::kIdle, 3'600'000},
                                 {"b", K::kBusy, 2'700'000}, {"b", K::kIdle, 3'600'000}};
  EXPECT_EQ(s.charges, want);
  w.idle_policy = IdlePolicy::kIdle;
  s = split_window_energy(w, {1000, S::kDcgm});
  want = {{"__idle__", K::kIdle, 400}, {"a", K::kBusy, 450}, {"a", K::kIdle, 0}, {"b", K::kBusy, 150}, {"b", K::kIdle, 0}};
  EXPECT_EQ(s.charges, want);
  EXPECT_THROW(split_window_energy(w, {-1, S::kDcgm}), Error);
  EXPECT_DOUBLE_EQ(millijoules_to_kwh(3'600'000'000), 1.0);
}

TEST(EnergyRollUp, SumsKnownWindowsExactly) {
  auto window = [](std::optional<WindowEnergyRecord> e) {
    WindowRecord w;
    w.energy = std::move(e);
    return w;
  };
  std::vector<WindowRecord> ws = {
      window(WindowEnergyRecord{1000, "nvml", {{"a", K::kBusy, 600}, {"a", K::kIdle, 400}}, 300.0}),
      window(std::nullopt),  // unknown: adds nothing, changes no label
      window(WindowEnergyRecord{3000, "nvml", {{"a", K::kBusy, 1000}, {"b", K::kBusy, 2000}}, 500.0})};
  auto m = merge_energy(ws);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->millijoules, 4000);
  EXPECT_EQ(m->source, "nvml");
  std::vector<EnergyCharge> want{{"a", K::kBusy, 1600}, {"a", K::kIdle, 400}, {"b", K::kBusy, 2000}};
  EXPECT_EQ(m->charges, want);
  EXPECT_DOUBLE_EQ(*m->carbon_g_per_kwh, (300.0 * 1000 + 500.0 * 3000) / 4000);  // energy-weighted
  ws[1] = window(WindowEnergyRecord{0, "power_integrated", {}, std::nullopt});
  m = merge_energy(ws);
  EXPECT_EQ(m->source, "mixed");
  EXPECT_FALSE(m->carbon_g_per_kwh);  // a window without an intensity: no mean
  EXPECT_FALSE(merge_energy({window(std::nullopt), window(std::nullopt)}));
}

// Randomised conservation: per GPU and window, the energy parts add up to the
// device's energy exactly, in millijoules, and each account's energy follows
// the same split as its cost (the same charge rows).
TEST(EnergySplitProperty, Conservation) {
  std::mt19937_64 rng(20261130);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int64_t> energy(0, 3'600'000'000'000LL);  // up to 1 MWh
  for (int iter = 0; iter < 20000; ++iter) {
    WindowInput in;
    in.window_seconds = iter % 13 == 0 ? 0 : 1 + unit(rng) * 3600;
    in.idle_policy = static_cast<IdlePolicy>(iter % 3);
    if (unit(rng) < 0.5) in.device_busy_fraction = unit(rng) * 1.2 - 0.1;
    int nh = static_cast<int>(rng() % 7), nu = static_cast<int>(rng() % 7);
    for (int i = 0; i < nh; ++i) in.holders.push_back({"acct" + std::to_string(rng() % 8), 0.1 + unit(rng) * 4});
    for (int i = 0; i < nu; ++i) {
      Activity a;
      if (unit(rng) < 0.6) a.busy_seconds = unit(rng) * in.window_seconds * 0.8;
      if (unit(rng) < 0.8) a.launches = rng() % 1000;
      if (unit(rng) < 0.5) a.vram_byte_seconds = unit(rng) * 1e12;
      in.activity["acct" + std::to_string(rng() % 8)] = a;
    }
    const int64_t mj = iter % 7 == 0 ? energy(rng) % 10 : energy(rng);
    EnergySplit e = split_window_energy(in, {mj, S::kNvml});
    int64_t sum = 0;
    for (const auto& c : e.charges) {
      ASSERT_GE(c.millijoules, 0) << iter;
      sum += c.millijoules;
    }
    ASSERT_EQ(sum, mj) << "iteration " << iter;
    ASSERT_EQ(e.busy_millijoules + e.idle_millijoules, mj);
    // Same rows as the cost split would produce for the same quantity.
    in.cost_micros = mj;
    WindowSplit c = split_window(in);
    ASSERT_EQ(c.charges.size(), e.charges.size());
    for (size_t i = 0; i < c.charges.size(); ++i) {
      ASSERT_EQ(c.charges[i].account, e.charges[i].account);
      ASSERT_EQ(c.charges[i].micros, e.charges[i].millijoules);
    }
  }
}

}  // namespace
}  // namespace gpuledger::ledger
