// Tests for ledger/usage.h and ledger/usage_totals.h: readings of the kernel
// maps folded into totals that never go backwards.
#include "probes/usage_totals.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "probes/usage.h"

namespace gpuledger::probes {
namespace {

class FakeNames : public CallNameLookup {
 public:
  std::string call_name(uint32_t id) const override {
    switch (id) {
      case 0: return "cuInit";
      case 1: return "cuMemAlloc_v2";
      case 2: return "cuLaunchKernel";
      case 3: return "cuMemAlloc_v2";  // two ids may carry the same name (two libraries)
      default: return "call#" + std::to_string(id);
    }
  }
};

// Workloads 101 and 202 on an unknown device.
const probes::CounterKey kA{101, GL_DEVICE_UNKNOWN};
const probes::CounterKey kB{202, GL_DEVICE_UNKNOWN};

gl_counters launches(uint64_t n) {
  gl_counters c{};
  c.launches = n;
  return c;
}

using Counters = std::map<probes::CounterKey, gl_counters>;
using Errors = std::map<probes::ErrorKey, uint64_t>;

class UsageTotalsTest : public ::testing::Test {
 protected:
  void absorb(const Counters& c, const Errors& e = {}) { totals_.absorb(c, e, names_); }
  uint64_t launches_of(const probes::CounterKey& key) const {
    auto t = totals_.totals();
    auto it = t.find(key);
    return it == t.end() ? ~uint64_t{0} : it->second.counters.launches;
  }
  std::map<std::string, uint64_t> errors_of(const probes::CounterKey& key) const {
    auto t = totals_.totals();
    auto it = t.find(key);
    return it == t.end() ? std::map<std::string, uint64_t>{{"<missing>", 0}} : it->second.errors_by_call;
  }
  FakeNames names_;
  UsageTotals totals_;
};

TEST_F(UsageTotalsTest, StartsEmpty) { EXPECT_TRUE(totals_.totals().empty()); }

TEST_F(UsageTotalsTest, SuccessiveReadingsOfOneEntryGiveItsLatestValue) {
  absorb({{kA, launches(5)}});
  EXPECT_EQ(launches_of(kA), 5u);
  absorb({{kA, launches(8)}});
  EXPECT_EQ(launches_of(kA), 8u);
  absorb({{kA, launches(8)}});  // no change: no double counting
  EXPECT_EQ(launches_of(kA), 8u);
}

TEST_F(UsageTotalsTest, AfterForgetAFreshEntryAddsOnTop) {
  absorb({{kA, launches(5)}});
  absorb({{kA, launches(8)}});
  totals_.forget_entries(kA.cgroup_key);
  EXPECT_EQ(launches_of(kA), 8u) << "forgetting keeps the totals";
  absorb({{kA, launches(3)}});
  EXPECT_EQ(launches_of(kA), 11u);
  absorb({{kA, launches(4)}});
  EXPECT_EQ(launches_of(kA), 12u);
}

TEST_F(UsageTotalsTest, AfterForgetALargerFreshEntryIsAllNew) {
  absorb({{kA, launches(5)}});
  totals_.forget_entries(kA.cgroup_key);
  absorb({{kA, launches(9)}});
  EXPECT_EQ(launches_of(kA), 14u);
}

TEST_F(UsageTotalsTest, AReadingThatGoesBackwardsWithoutForgetIsTreatedAsNew) {
  // The kernel re-created the entry between two readings (delta(now, last) =
  // now when now < last).
  absorb({{kA, launches(8)}});
  absorb({{kA, launches(3)}});
  EXPECT_EQ(launches_of(kA), 11u);
  absorb({{kA, launches(5)}});
  EXPECT_EQ(launches_of(kA), 13u);
}

TEST_F(UsageTotalsTest, EveryFieldIsFoldedIndependently) {
  gl_counters c{};
  c.launches = 1;
  c.launched_threads = 2;
  c.graph_launches = 3;
  c.allocations = 4;
  c.allocated_bytes = 5;
  c.freed_bytes = 6;
  for (int d = 0; d < GL_DIR_COUNT; ++d) {
    c.memcpy_bytes[d] = 10 + d;
    c.memcpy_calls[d] = 20 + d;
  }
  c.syncs = 7;
  c.sync_ns = 8;
  c.untracked_frees = 9;
  absorb({{kA, c}});
  gl_counters d2 = c;
  d2.launches = 11;              // +10
  d2.memcpy_bytes[GL_DIR_PEER] = 1;  // went backwards: +1
  d2.sync_ns = 1008;             // +1000
  absorb({{kA, d2}});

  const gl_counters& t = totals_.totals().at(kA).counters;
  EXPECT_EQ(t.launches, 11u);
  EXPECT_EQ(t.launched_threads, 2u);
  EXPECT_EQ(t.graph_launches, 3u);
  EXPECT_EQ(t.allocations, 4u);
  EXPECT_EQ(t.allocated_bytes, 5u);
  EXPECT_EQ(t.freed_bytes, 6u);
  EXPECT_EQ(t.memcpy_bytes[GL_DIR_HTOD], 10u);
  EXPECT_EQ(t.memcpy_bytes[GL_DIR_DTOH], 11u);
  EXPECT_EQ(t.memcpy_bytes[GL_DIR_DTOD], 12u);
  EXPECT_EQ(t.memcpy_bytes[GL_DIR_PEER], 13u + 1u);
  EXPECT_EQ(t.memcpy_bytes[GL_DIR_UNKNOWN], 14u);
  for (int d = 0; d < GL_DIR_COUNT; ++d) EXPECT_EQ(t.memcpy_calls[d], 20u + d) << d;
  EXPECT_EQ(t.syncs, 7u);
  EXPECT_EQ(t.sync_ns, 1008u);
  EXPECT_EQ(t.untracked_frees, 9u);
}

TEST_F(UsageTotalsTest, KeysAreIndependent) {
  absorb({{kA, launches(5)}, {kB, launches(1)}});
  totals_.forget_entries(kB.cgroup_key);
  absorb({{kA, launches(6)}, {kB, launches(2)}});
  EXPECT_EQ(launches_of(kA), 6u);
  EXPECT_EQ(launches_of(kB), 3u);
}

TEST_F(UsageTotalsTest, AKeyMissingFromAReadingKeepsItsTotal) {
  absorb({{kA, launches(5)}, {kB, launches(1)}});
  absorb({{kB, launches(2)}});
  EXPECT_EQ(launches_of(kA), 5u);
  EXPECT_EQ(launches_of(kB), 2u);
  absorb({{kA, launches(7)}});  // reappears, continuing: +2
  EXPECT_EQ(launches_of(kA), 7u);
}

TEST_F(UsageTotalsTest, ErrorsAreNamedByCallAndFoldedLikeCounters) {
  absorb({{kA, launches(1)}}, {{{kA, 0}, 1}, {{kA, 1}, 4}});
  EXPECT_EQ(errors_of(kA), (std::map<std::string, uint64_t>{{"cuInit", 1}, {"cuMemAlloc_v2", 4}}));
  absorb({}, {{{kA, 0}, 1}, {{kA, 1}, 6}, {{kA, 2}, 2}});
  EXPECT_EQ(errors_of(kA),
            (std::map<std::string, uint64_t>{{"cuInit", 1}, {"cuMemAlloc_v2", 6}, {"cuLaunchKernel", 2}}));
  EXPECT_EQ(launches_of(kA), 1u);
}

TEST_F(UsageTotalsTest, TwoIdsWithOneNameAreSummed) {
  absorb({}, {{{kA, 1}, 2}, {{kA, 3}, 5}});
  EXPECT_EQ(errors_of(kA), (std::map<std::string, uint64_t>{{"cuMemAlloc_v2", 7}}));
  absorb({}, {{{kA, 1}, 3}, {{kA, 3}, 5}});
  EXPECT_EQ(errors_of(kA), (std::map<std::string, uint64_t>{{"cuMemAlloc_v2", 8}}));
}

TEST_F(UsageTotalsTest, ErrorsOnlyKeyGetsATotal) {
  absorb({}, {{{kB, 2}, 3}});
  auto t = totals_.totals();
  ASSERT_TRUE(t.count(kB));
  EXPECT_EQ(t.at(kB).counters.launches, 0u);
  EXPECT_EQ(t.at(kB).errors_by_call, (std::map<std::string, uint64_t>{{"cuLaunchKernel", 3}}));
}

TEST_F(UsageTotalsTest, ForgetResetsErrorsOfThatKeyOnly) {
  absorb({}, {{{kA, 2}, 4}, {{kB, 2}, 4}});
  totals_.forget_entries(kA.cgroup_key);
  absorb({}, {{{kA, 2}, 5}, {{kB, 2}, 5}});
  EXPECT_EQ(errors_of(kA), (std::map<std::string, uint64_t>{{"cuLaunchKernel", 9}}));
  EXPECT_EQ(errors_of(kB), (std::map<std::string, uint64_t>{{"cuLaunchKernel", 5}}));
}

TEST_F(UsageTotalsTest, ErrorGoingBackwardsIsTreatedAsNew) {
  absorb({}, {{{kA, 0}, 10}});
  absorb({}, {{{kA, 0}, 2}});
  EXPECT_EQ(errors_of(kA), (std::map<std::string, uint64_t>{{"cuInit", 12}}));
}

TEST_F(UsageTotalsTest, ForgetOfAnUnknownKeyIsHarmless) {
  totals_.forget_entries(999);
  absorb({{kA, launches(2)}});
  totals_.forget_entries(999);
  absorb({{kA, launches(3)}});
  EXPECT_EQ(launches_of(kA), 3u);
  EXPECT_FALSE(totals_.totals().count(probes::CounterKey{999, GL_DEVICE_UNKNOWN}));
}

TEST(Usage, PlusEqualsAddsEveryFieldAndMergesErrors) {
  Usage a;
  a.counters.launches = 1;
  a.counters.allocated_bytes = 100;
  a.counters.memcpy_bytes[GL_DIR_DTOH] = 5;
  a.counters.memcpy_calls[GL_DIR_UNKNOWN] = 1;
  a.counters.untracked_frees = 2;
  a.errors_by_call = {{"cuInit", 1}, {"cuMemFree_v2", 2}};
  Usage b;
  b.counters.launches = 10;
  b.counters.freed_bytes = 40;
  b.counters.memcpy_bytes[GL_DIR_DTOH] = 7;
  b.counters.memcpy_calls[GL_DIR_UNKNOWN] = 3;
  b.counters.sync_ns = 9;
  b.counters.untracked_frees = 1;
  b.errors_by_call = {{"cuInit", 4}, {"cuLaunchKernel", 1}};

  Usage& r = (a += b);
  EXPECT_EQ(&r, &a);
  EXPECT_EQ(a.counters.launches, 11u);
  EXPECT_EQ(a.counters.allocated_bytes, 100u);
  EXPECT_EQ(a.counters.freed_bytes, 40u);
  EXPECT_EQ(a.counters.memcpy_bytes[GL_DIR_DTOH], 12u);
  EXPECT_EQ(a.counters.memcpy_calls[GL_DIR_UNKNOWN], 4u);
  EXPECT_EQ(a.counters.sync_ns, 9u);
  EXPECT_EQ(a.counters.untracked_frees, 3u);
  EXPECT_EQ(a.errors_by_call,
            (std::map<std::string, uint64_t>{{"cuInit", 5}, {"cuMemFree_v2", 2}, {"cuLaunchKernel", 1}}));
  EXPECT_EQ(a.live_bytes(), 60u);
  // b is unchanged.
  EXPECT_EQ(b.counters.launches, 10u);
}

TEST(Usage, PlusEqualsZeroIsIdentity) {
  Usage a;
  a.counters.syncs = 3;
  a.errors_by_call = {{"cuInit", 1}};
  Usage copy = a;
  a += Usage{};
  EXPECT_EQ(a, copy);
}

TEST(Usage, EqualityComparesCountersAndErrors) {
  Usage a, b;
  EXPECT_EQ(a, b);
  b.counters.memcpy_calls[GL_DIR_PEER] = 1;
  EXPECT_FALSE(a == b);
  b = a;
  b.errors_by_call["cuInit"] = 0;  // an explicit zero is still a difference
  EXPECT_FALSE(a == b);
}

TEST(Usage, LiveBytes) {
  Usage u;
  EXPECT_EQ(u.live_bytes(), 0u);
  u.counters.allocated_bytes = 4096;
  u.counters.freed_bytes = 1024;
  EXPECT_EQ(u.live_bytes(), 3072u);
  u.counters.freed_bytes = 4096;
  EXPECT_EQ(u.live_bytes(), 0u);
  u.counters.freed_bytes = 5000;  // frees of memory allocated before the agent attached
  EXPECT_EQ(u.live_bytes(), 0u);
}

}  // namespace
}  // namespace gpuledger::probes

namespace gpuledger::probes {
namespace {

TEST(UsageTotalsDevices, OneWorkloadOnTwoDevicesKeepsThemApartAndForgetsBoth) {
  struct Names : CallNameLookup {
    std::string call_name(uint32_t) const override { return "cuLaunchKernel"; }
  } names;
  UsageTotals totals;
  const probes::CounterKey gpu0{7, 0}, gpu1{7, 1};
  gl_counters c0{}, c1{};
  c0.launches = 2;
  c1.launches = 5;
  totals.absorb({{gpu0, c0}, {gpu1, c1}}, {{probes::ErrorKey{gpu1, 0}, 1}}, names);
  totals.forget_entries(7);
  c0.launches = 1;  // both entries re-created by the kernel after the agent deleted them
  totals.absorb({{gpu0, c0}}, {}, names);
  auto t = totals.totals();
  EXPECT_EQ(t.at(gpu0).counters.launches, 3u);
  EXPECT_EQ(t.at(gpu1).counters.launches, 5u);
  EXPECT_EQ(t.at(gpu1).errors_by_call.at("cuLaunchKernel"), 1u);
}

TEST(BusyEstimate, SpansWhenTheAbiHasThemElseSyncTime) {
  Usage u;
  u.counters.sync_ns = 2'500'000'000;
  if constexpr (requires { u.counters.busy_ns; }) {
    u.counters.busy_ns = 1'500'000'000;
    EXPECT_DOUBLE_EQ(busy_seconds_estimate(u), 1.5);
  } else {
    EXPECT_DOUBLE_EQ(busy_seconds_estimate(u), 2.5);
  }
}

}  // namespace
}  // namespace gpuledger::probes
