#include "attribution/map_full_log.h"

#include <gtest/gtest.h>

namespace gpuledger::attribution {
namespace {

using namespace std::chrono_literals;

std::array<uint64_t, GL_STAT_COUNT> stats(uint64_t workloads_full) {
  std::array<uint64_t, GL_STAT_COUNT> s{};
  s[GL_STAT_WORKLOADS_FULL] = workloads_full;
  return s;
}

// Issue 10: a full workload map was only a counter. Now a line when it starts,
// a reminder at most once per interval while it lasts, a line when it ends.
TEST(MapFullLog, OneLinePerTransitionRateLimited) {
  MapFullLog log(16384, 60s);
  const auto t0 = MapFullLog::Clock::time_point{} + 1000s;
  EXPECT_TRUE(log.update(stats(7), t0).empty()) << "counts from before the first reading are not news";
  EXPECT_TRUE(log.update(stats(7), t0 + 1s).empty());
  auto lines = log.update(stats(10), t0 + 2s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "the workload map is full (16384 entries, --max-workloads): calls of new workloads are counted under "
            "__overflow__ (gpuledger_bpf_overflow_total) (3 so far)");
  for (int s = 3; s < 62; ++s) EXPECT_TRUE(log.update(stats(10 + s), t0 + std::chrono::seconds(s)).empty()) << s;
  lines = log.update(stats(100), t0 + 62s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("still: the workload map is full", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("(90 more since the last report)"), std::string::npos) << lines[0];
  EXPECT_TRUE(log.update(stats(100), t0 + 100s).empty());
  lines = log.update(stats(100), t0 + 122s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "workload map: no overflow for 60 s (0 since the last report)");
  EXPECT_TRUE(log.update(stats(100), t0 + 500s).empty());
  EXPECT_EQ(log.update(stats(101), t0 + 501s).size(), 1u) << "a new episode is reported again";
}

TEST(MapFullLog, EachMapOnItsOwn) {
  MapFullLog log(8, 60s);
  const auto t0 = MapFullLog::Clock::time_point{} + 1000s;
  log.update({}, t0);
  std::array<uint64_t, GL_STAT_COUNT> s{};
  s[GL_STAT_PROCS_FULL] = 1;
  s[GL_STAT_WORKLOADS_NOMEM] = 2;
  s[GL_STAT_EVENTS_DROPPED] = 5;  // not a map being full: the ring buffer has its own metric
  auto lines = log.update(s, t0 + 1s);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("new workload entries cannot be allocated", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("the process map is full", 0), 0u) << lines[1];
}

}  // namespace
}  // namespace gpuledger::attribution
