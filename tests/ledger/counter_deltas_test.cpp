// Counter deltas alone (counter_deltas.h): the reset rule, the spread over a
// workload's streams and slots, and the restart baseline.
#include "ledger/counter_deltas.h"

#include <gtest/gtest.h>

namespace gpuledger::ledger {
namespace {

using Activities = std::map<std::pair<std::string, std::string>, Activity>;  // (slot, account)

std::pair<std::string, std::string> key(const std::string& slot) { return {slot, "job"}; }

// The ledger's calls: the first observation is the baseline, each later one
// adds its deltas and is remembered.
class Deltas {
 public:
  explicit Deltas(std::optional<CounterBaseline> stored = std::nullopt, std::string counter_set = "")
      : stored_(std::move(stored)) {
    deltas.set_counter_set(std::move(counter_set));
  }
  void observe(const Observation& obs) {
    const HeldSlots held = held_slots(obs);
    if (!started_) {
      started_ = true;
      if (deltas.take_baseline(obs, stored_)) add(obs, held);
    } else {
      add(obs, held);
    }
    deltas.remember(obs, held);
  }
  // The job's activity on `slot` (none: zero).
  Activity of(const std::string& slot) const {
    auto it = activity.find({slot, "job"});
    return it == activity.end() ? Activity{} : it->second;
  }
  CounterDeltas deltas;
  Activities activity;

 private:
  void add(const Observation& obs, const HeldSlots& held) {
    deltas.add(obs, held, [this](const std::string& slot, const std::string& account) -> Activity& {
      return activity[{slot, account}];
    });
  }
  std::optional<CounterBaseline> stored_;
  bool started_ = false;
};

Observation one_workload(std::vector<std::string> node_slots, WorkloadUsage w) {
  Observation o;
  for (auto& uuid : node_slots) o.slots.push_back({uuid, "x", std::nullopt, ""});
  o.workloads = {std::move(w)};
  return o;
}

// A decrease of the workload's total is a reset (its map entries were
// recreated): all of the new value is new activity, wherever it is.
TEST(CounterDeltas, AWorkloadTotalGoingBackwardsIsAReset) {
  auto obs = [](uint64_t on_slot, uint64_t rest) {
    WorkloadUsage w;
    w.account = "job";
    w.launches = on_slot + rest;
    w.busy_seconds = static_cast<double>(on_slot + rest) / 10.0;
    if (on_slot) w.by_slot["GPU-0"] = {static_cast<double>(on_slot) / 10.0, on_slot, 0};
    return one_workload({"GPU-0"}, w);
  };
  Deltas d;
  d.observe(obs(500, 500));
  d.observe(obs(600, 600));  // +200
  d.observe(obs(30, 20));    // reset: 50 new
  d.observe(obs(60, 40));    // +50
  ASSERT_EQ(d.activity.size(), 1u);
  const Activity a = d.of("GPU-0");
  EXPECT_EQ(a.launches, 300u);
  EXPECT_NEAR(a.busy_seconds, 30.0, 1e-9);
  EXPECT_EQ(d.deltas.unattributed(), 0u);
}

// Counts with a known GPU go to it; the rest to the slots the workload uses.
TEST(CounterDeltas, PerSlotUsageGoesToItsSlotAndTheRestToTheSlotsItUses) {
  auto obs = [](double t) {
    WorkloadUsage w;
    w.account = "job";
    w.busy_seconds = t * 0.75;
    w.launches = static_cast<uint64_t>(t) * 3;
    w.by_slot["GPU-0"] = {t * 0.25, static_cast<uint64_t>(t), 0};
    w.by_slot["GPU-1"] = {t * 0.25, static_cast<uint64_t>(t), 0};
    w.slots = {"GPU-1"};
    return one_workload({"GPU-0", "GPU-1"}, w);
  };
  Deltas d;
  d.observe(obs(0));
  d.observe(obs(10));
  EXPECT_DOUBLE_EQ(d.of("GPU-0").busy_seconds, 2.5);
  EXPECT_EQ(d.of("GPU-0").launches, 10u);
  EXPECT_DOUBLE_EQ(d.of("GPU-1").busy_seconds, 5.0);
  EXPECT_EQ(d.of("GPU-1").launches, 20u);
  const auto& streams = d.deltas.streams();
  ASSERT_EQ(streams.size(), 3u);
  EXPECT_EQ(streams.at({"job", ""}).slots, std::vector<std::string>{"GPU-1"});
  EXPECT_EQ(streams.at({"job", ""}).launches, 10u);
  EXPECT_TRUE(d.deltas.live("job"));
  EXPECT_FALSE(d.deltas.live("other"));
}

// Counts moving from the rest to a known GPU are not a reset: the workload's
// delta is spread by the streams' growth, nothing counted twice.
TEST(CounterDeltas, CountsMovingBetweenStreamsAreNotCountedTwice) {
  auto obs = [](uint64_t on_slot, uint64_t total) {
    WorkloadUsage w;
    w.account = "job";
    w.launches = total;
    w.busy_seconds = static_cast<double>(total);
    if (on_slot) w.by_slot["GPU-0"] = {static_cast<double>(on_slot), on_slot, 0};
    w.slots = {"GPU-1"};
    return one_workload({"GPU-0", "GPU-1"}, w);
  };
  Deltas d;
  d.observe(obs(0, 100));
  d.observe(obs(100, 110));  // the GPU of 100 learnt late: +10, all of the rest's growth is GPU-0's
  EXPECT_EQ(d.of("GPU-0").launches, 10u);
  EXPECT_DOUBLE_EQ(d.of("GPU-0").busy_seconds, 10.0);
  EXPECT_EQ(d.activity.count(key("GPU-1")), 0u);
}

// Over several slots evenly; whole launches, the first slots taking the remainder.
TEST(CounterDeltas, TheRestIsDividedEvenlyAmongTheSlotsHeld) {
  auto obs = [](uint64_t launches) {
    WorkloadUsage w;
    w.account = "job";
    w.launches = launches;
    w.busy_seconds = static_cast<double>(launches) / 5.0;
    Observation o = one_workload({"GPU-0", "GPU-1", "GPU-2"}, w);
    o.holders = {{"GPU-1", "job", {}, 1}, {"GPU-0", "job", {}, 1}};
    return o;
  };
  Deltas d;
  d.observe(obs(0));
  d.observe(obs(5));
  EXPECT_EQ(d.of("GPU-0").launches, 3u);
  EXPECT_EQ(d.of("GPU-1").launches, 2u);
  EXPECT_DOUBLE_EQ(d.of("GPU-0").busy_seconds, 0.5);
  EXPECT_DOUBLE_EQ(d.of("GPU-1").busy_seconds, 0.5);
  EXPECT_EQ(d.activity.count(key("GPU-2")), 0u);
}

// Neither used, nor held, and the node has several slots: not attributed, counted.
TEST(CounterDeltas, AWorkloadWithNoSlotIsCountedUnattributed) {
  WorkloadUsage w;
  w.account = "job";
  Deltas d;
  d.observe(one_workload({"GPU-0", "GPU-1"}, w));
  w.launches = 4;
  w.busy_seconds = 1;
  d.observe(one_workload({"GPU-0", "GPU-1"}, w));
  EXPECT_TRUE(d.activity.empty());
  EXPECT_EQ(d.deltas.unattributed(), 1u);
}

WorkloadUsage job(double busy, uint64_t launches) {
  WorkloadUsage w;
  w.account = "job";
  w.busy_seconds = busy;
  w.launches = launches;
  return w;
}

// The same counter set: the first observation is charged against the stored
// baseline; what it covers after is the observation's counters.
TEST(CounterDeltas, TheStoredBaselineOfTheSameCounterSetIsAdopted) {
  const CounterBaseline stored{"set-1", {{"job", {4, 40}}, {"gone", {1, 1}}}};
  Deltas d(stored, "set-1");
  const Observation first = one_workload({"GPU-0"}, job(10, 100));
  d.observe(first);
  EXPECT_DOUBLE_EQ(d.of("GPU-0").busy_seconds, 6);
  EXPECT_EQ(d.of("GPU-0").launches, 60u);
  // "gone" is not seen again: kept in what is charged until a window has passed.
  EXPECT_EQ(d.deltas.baseline(), (CounterBaseline{"set-1", {{"gone", {1, 1}}, {"job", {10, 100}}}}));
  Observation later = one_workload({"GPU-0"}, job(10, 100));
  later.time = 60;
  d.deltas.forget_unseen_baseline(later, 0, 60);
  EXPECT_EQ(d.deltas.baseline().accounts.size(), 2u);
  later.time = 61;
  d.deltas.forget_unseen_baseline(later, 0, 60);
  EXPECT_EQ(d.deltas.baseline(), (CounterBaseline{"set-1", {{"job", {10, 100}}}}));
}

// Another counter set (or none pinned): the counters started again, the
// observation is the baseline and nothing is charged for it.
TEST(CounterDeltas, AnotherCounterSetsBaselineIsNotUsed) {
  for (const std::string set : {"set-2", ""}) {
    Deltas d(CounterBaseline{"set-1", {{"job", {4, 40}}}}, set);
    d.observe(one_workload({"GPU-0"}, job(10, 100)));
    EXPECT_TRUE(d.activity.empty()) << set;
    EXPECT_EQ(d.deltas.baseline(), (CounterBaseline{set, {{"job", {10, 100}}}})) << set;
  }
}

}  // namespace
}  // namespace gpuledger::ledger
