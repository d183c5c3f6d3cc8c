#include "ledger/window_split.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "common/error.h"

namespace gpuledger::ledger {
namespace {

using K = ChargeKind;

struct Case {
  std::string name;
  WindowInput input;
  std::vector<Charge> expected;
  bool exclusive = false;
};

Activity busy(double s, uint64_t launches = 1) { return Activity{s, 0, launches}; }

std::vector<Case> cases() {
  std::vector<Case> c;
  // 1. Exclusive GPU, holder busy 30 of 60 s (spans): pays all of C, half busy.
  c.push_back({"exclusive_spans", {.cost_micros = 1'000'000, .window_seconds = 60, .holders = {{"a"}},
                                   .activity = {{"a", busy(30)}}},
               {{"a", K::kBusy, 500'000}, {"a", K::kIdle, 500'000}}, true});
  // 2. Exclusive, device says 25 % busy; idle policy "idle" does not apply.
  c.push_back({"exclusive_device_ignores_policy",
               {.cost_micros = 1000, .window_seconds = 60, .holders = {{"a"}}, .activity = {{"a", busy(50)}},
                .device_busy_fraction = 0.25, .idle_policy = IdlePolicy::kIdle},
               {{"a", K::kBusy, 250}, {"a", K::kIdle, 750}}, true});
  // 3. Exclusive, idle holder: all idle.
  c.push_back({"exclusive_idle_holder", {.cost_micros = 999, .window_seconds = 60, .holders = {{"a"}}},
               {{"a", K::kIdle, 999}}, true});
  // 4. Shared by two holders; device 60 % busy; busy split 3:1; idle to holders equally.
  c.push_back({"shared_holders_policy",
               {.cost_micros = 1'000'000, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", busy(30)}, {"b", busy(10)}}, .device_busy_fraction = 0.6},
               {{"a", K::kBusy, 450'000}, {"a", K::kIdle, 200'000}, {"b", K::kBusy, 150'000}, {"b", K::kIdle, 200'000}}});
  // 5. Same with usage policy: idle split 3:1 too.
  c.push_back({"shared_usage_policy",
               {.cost_micros = 1'000'000, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", busy(30)}, {"b", busy(10)}}, .device_busy_fraction = 0.6,
                .idle_policy = IdlePolicy::kUsage},
               {{"a", K::kBusy, 450'000}, {"a", K::kIdle, 300'000}, {"b", K::kBusy, 150'000}, {"b", K::kIdle, 100'000}}});
  // 6. Same with idle policy: idle to __idle__; holders keep a 0 idle row.
  c.push_back({"shared_idle_policy",
               {.cost_micros = 1'000'000, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", busy(30)}, {"b", busy(10)}}, .device_busy_fraction = 0.6,
                .idle_policy = IdlePolicy::kIdle},
               {{"__idle__", K::kIdle, 400'000}, {"a", K::kBusy, 450'000}, {"a", K::kIdle, 0}, {"b", K::kBusy, 150'000},
                {"b", K::kIdle, 0}}});
  // 7. Shared, no device: busy from spans (30+10)/60 = 2/3 of 900 = 600.
  c.push_back({"shared_spans",
               {.cost_micros = 900, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", busy(30)}, {"b", busy(10)}}},
               {{"a", K::kBusy, 450}, {"a", K::kIdle, 150}, {"b", K::kBusy, 150}, {"b", K::kIdle, 150}}});
  // 8. Spans over the window length are capped at 1.
  c.push_back({"spans_capped",
               {.cost_micros = 100, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", busy(60)}, {"b", busy(60)}}},
               {{"a", K::kBusy, 50}, {"a", K::kIdle, 0}, {"b", K::kBusy, 50}, {"b", K::kIdle, 0}}});
  // 9. No holder: users pay busy, idle is __unallocated__.
  c.push_back({"no_holder_users",
               {.cost_micros = 1000, .window_seconds = 60, .activity = {{"u", busy(15)}}},
               {{"__unallocated__", K::kIdle, 750}, {"u", K::kBusy, 250}}});
  // 10. No holder, nobody: all __unallocated__.
  c.push_back({"no_holder_nobody", {.cost_micros = 1000, .window_seconds = 60},
               {{"__unallocated__", K::kIdle, 1000}}});
  // 11. No holder, no users but the device is busy: busy to __unallocated__ too.
  c.push_back({"no_holder_device_busy", {.cost_micros = 1000, .window_seconds = 60, .device_busy_fraction = 0.4},
               {{"__unallocated__", K::kBusy, 400}, {"__unallocated__", K::kIdle, 600}}});
  // 12. Fractional-GPU scheduler: reservation pod r holds, real users x,y use it.
  c.push_back({"non_holder_users",
               {.cost_micros = 1000, .window_seconds = 60, .holders = {{"r"}},
                .activity = {{"x", busy(20)}, {"y", busy(10)}}},
               {{"r", K::kIdle, 500}, {"x", K::kBusy, 333}, {"y", K::kBusy, 167}}});
  // 13. Holder plus a non-holder user: not exclusive; each pays its activity.
  c.push_back({"holder_and_outsider",
               {.cost_micros = 600, .window_seconds = 60, .holders = {{"h"}},
                .activity = {{"h", busy(12)}, {"x", busy(6)}}},
               {{"h", K::kBusy, 120}, {"h", K::kIdle, 420}, {"x", K::kBusy, 60}}});
  // 14. Device busy but no attributed activity on a shared GPU: holders pay busy by weight.
  c.push_back({"device_busy_no_activity",
               {.cost_micros = 1000, .window_seconds = 60, .holders = {{"a", 3}, {"b", 1}},
                .device_busy_fraction = 0.5},
               {{"a", K::kBusy, 375}, {"a", K::kIdle, 375}, {"b", K::kBusy, 125}, {"b", K::kIdle, 125}}});
  // 15. No busy seconds: weights fall back to launches.
  c.push_back({"fallback_launches",
               {.cost_micros = 1000, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", Activity{0, 0, 3}}, {"b", Activity{0, 0, 1}}}, .device_busy_fraction = 1.0},
               {{"a", K::kBusy, 750}, {"a", K::kIdle, 0}, {"b", K::kBusy, 250}, {"b", K::kIdle, 0}}});
  // 16. No busy seconds, no launches: weights fall back to VRAM byte-seconds.
  c.push_back({"fallback_vram",
               {.cost_micros = 1000, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                .activity = {{"a", Activity{0, 1e9, 0}}, {"b", Activity{0, 4e9, 0}}}, .device_busy_fraction = 0.5},
               {{"a", K::kBusy, 100}, {"a", K::kIdle, 250}, {"b", K::kBusy, 400}, {"b", K::kIdle, 250}}});
  // 17. Largest remainder with a tie broken by account id: 100 over three equal users.
  c.push_back({"remainder_tie",
               {.cost_micros = 100, .window_seconds = 60, .holders = {{"c"}, {"a"}, {"b"}},
                .activity = {{"a", busy(1)}, {"b", busy(1)}, {"c", busy(1)}}, .device_busy_fraction = 1.0},
               {{"a", K::kBusy, 34}, {"a", K::kIdle, 0}, {"b", K::kBusy, 33}, {"b", K::kIdle, 0}, {"c", K::kBusy, 33},
                {"c", K::kIdle, 0}}});
  // 18. Holder weights (time-slicing replicas): idle 2:1.
  c.push_back({"holder_weights",
               {.cost_micros = 300, .window_seconds = 60, .holders = {{"a", 1}, {"b", 1}, {"a", 1}}},
               {{"a", K::kIdle, 200}, {"b", K::kIdle, 100}}});
  // 19. Zero cost: holders still appear with 0.
  c.push_back({"zero_cost", {.cost_micros = 0, .window_seconds = 60, .holders = {{"a"}}, .activity = {{"a", busy(1)}}},
               {{"a", K::kIdle, 0}}, true});
  // 20. Usage policy with no users falls back to the holders.
  c.push_back({"usage_policy_no_users",
               {.cost_micros = 10, .window_seconds = 60, .holders = {{"a"}, {"b"}}, .idle_policy = IdlePolicy::kUsage},
               {{"a", K::kIdle, 5}, {"b", K::kIdle, 5}}});
  return c;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class WindowSplitTable : public ::testing::TestWithParam<Case> {};

TEST_P(WindowSplitTable, Charges) {
  const Case& c = GetParam();
  WindowSplit s = split_window(c.input);
  EXPECT_EQ(s.charges, c.expected);
  EXPECT_EQ(s.exclusive, c.exclusive);
  int64_t sum = 0;
  for (const auto& ch : s.charges) sum += ch.micros;
  EXPECT_EQ(sum, c.input.cost_micros);
  EXPECT_EQ(s.busy_micros + s.idle_micros, c.input.cost_micros);
}

INSTANTIATE_TEST_SUITE_P(Cases, WindowSplitTable, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(WindowSplit, BusySourceAndShares) {
  WindowSplit s = split_window({.cost_micros = 100, .window_seconds = 60, .holders = {{"a"}, {"b"}},
                                .activity = {{"a", busy(30)}, {"b", busy(10)}}});
  EXPECT_EQ(s.busy_source, BusySource::kSpans);
  EXPECT_DOUBLE_EQ(s.busy_fraction, 40.0 / 60.0);
  EXPECT_DOUBLE_EQ(s.activity_share.at("a"), 0.75);
  EXPECT_DOUBLE_EQ(s.activity_share.at("b"), 0.25);
  s = split_window({.cost_micros = 100, .window_seconds = 60, .device_busy_fraction = 1.7});
  EXPECT_EQ(s.busy_source, BusySource::kDevice);
  EXPECT_DOUBLE_EQ(s.busy_fraction, 1.0);
}

TEST(WindowSplit, RejectsBadInput) {
  EXPECT_THROW(split_window({.cost_micros = -1}), Error);
  EXPECT_THROW(split_window({.cost_micros = 1, .holders = {{"a", 0}}}), Error);
  EXPECT_THROW(split_window({.cost_micros = 1, .holders = {{""}}}), Error);
  EXPECT_THROW(parse_idle_policy("nobody"), Error);
  EXPECT_EQ(parse_idle_policy("usage"), IdlePolicy::kUsage);
}

TEST(LargestRemainder, ExactAndDeterministic) {
  auto r = largest_remainder(10, {{"x", 1}, {"y", 1}, {"z", 1}});
  EXPECT_EQ(r, (std::map<std::string, int64_t>{{"x", 4}, {"y", 3}, {"z", 3}}));
  r = largest_remainder(7, {{"a", 0}, {"b", 2}});
  EXPECT_EQ(r, (std::map<std::string, int64_t>{{"a", 0}, {"b", 7}}));
}

// Randomised conservation: thousands of random windows, every one adds up to C
// exactly, no negative charge, no charge to an account that is neither holder,
// user nor a special account.
TEST(WindowSplitProperty, Conservation) {
  std::mt19937_64 rng(20261129);
  std::uniform_int_distribution<int> n_accounts(0, 6);
  std::uniform_int_distribution<int64_t> cost(0, 50'000'000'000LL);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int iter = 0; iter < 20000; ++iter) {
    WindowInput in;
    in.cost_micros = iter % 7 == 0 ? cost(rng) % 10 : cost(rng);
    in.window_seconds = iter % 13 == 0 ? 0 : 1 + unit(rng) * 3600;
    in.idle_policy = static_cast<IdlePolicy>(iter % 3);
    in.cost_policy = static_cast<CostPolicy>((iter / 3) % 3);
    in.blend_allocated_weight = unit(rng);
    in.memory_price_share = iter % 5 == 0 ? 0 : unit(rng);
    if (unit(rng) < 0.5) in.vram_capacity_bytes = unit(rng) * 1e9;
    if (unit(rng) < 0.5) in.device_busy_fraction = unit(rng) * 1.2 - 0.1;
    int nh = n_accounts(rng), nu = n_accounts(rng);
    for (int i = 0; i < nh; ++i) in.holders.push_back({"acct" + std::to_string(rng() % 8), 0.1 + unit(rng) * 4});
    for (int i = 0; i < nu; ++i) {
      Activity a;
      double mode = unit(rng);
      if (mode < 0.6) a.busy_seconds = unit(rng) * in.window_seconds * 0.8;
      if (mode < 0.8) a.launches = rng() % 1000;
      if (unit(rng) < 0.5) a.vram_byte_seconds = unit(rng) * 1e12;
      in.activity["acct" + std::to_string(rng() % 8)] = a;
    }
    WindowSplit s = split_window(in);
    int64_t sum = 0;
    for (const auto& ch : s.charges) {
      ASSERT_GE(ch.micros, 0) << iter;
      bool known = ch.account == kIdleAccount || ch.account == kUnallocatedAccount || in.activity.count(ch.account) ||
                   std::any_of(in.holders.begin(), in.holders.end(), [&](const Holder& h) { return h.account == ch.account; });
      ASSERT_TRUE(known) << ch.account;
      sum += ch.micros;
    }
    ASSERT_EQ(sum, in.cost_micros) << "iteration " << iter;
    ASSERT_EQ(s.busy_micros + s.idle_micros + s.memory_micros, in.cost_micros) << "iteration " << iter;
    ASSERT_GE(s.busy_fraction, 0.0);
    ASSERT_LE(s.busy_fraction, 1.0);
  }
}

}  // namespace
}  // namespace gpuledger::ledger
