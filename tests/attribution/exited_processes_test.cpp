// The owners of exited CUDA processes (exited_processes.h): kept long enough
// for the ledger's next reading of NVML, and bounded however many processes a
// tenant starts.
#include "attribution/exited_processes.h"

#include <gtest/gtest.h>

namespace gpuledger::attribution {
namespace {

constexpr uint64_t kS = 1'000'000;

TEST(ExitedProcesses, ARecordIsKeptTenMinutesAfterItsExit) {
  ExitedProcesses e;
  e.add({1, "a", false, 100 * kS, 101 * kS});
  e.add({2, "b", false, 100 * kS, 300 * kS});
  ASSERT_EQ(e.recent(101 * kS + ExitedProcesses::kKeepUs).size(), 2u);
  const auto later = e.recent(102 * kS + ExitedProcesses::kKeepUs);  // 1 is older than 10 minutes
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].pid, 2u);
  EXPECT_EQ(later[0].account, "b");
  EXPECT_EQ(e.evicted(), 0u);  // aged out, not evicted
}

TEST(ExitedProcesses, AFloodOfProcessesEvictsTheOldestAndCountsThem) {
  ExitedProcesses e;
  const size_t flood = ExitedProcesses::kMaxEntries + 100;
  for (size_t i = 0; i < flood; ++i) e.add({static_cast<uint32_t>(i + 1), "attacker", false, kS, kS + i});
  const auto kept = e.recent(kS + flood);
  ASSERT_EQ(kept.size(), ExitedProcesses::kMaxEntries);
  EXPECT_EQ(kept.front().pid, 101u);  // the first 100 went
  EXPECT_EQ(e.evicted(), 100u);
}

}  // namespace
}  // namespace gpuledger::attribution
