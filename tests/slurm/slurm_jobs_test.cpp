#include "slurm/slurm_jobs.h"

#include <gtest/gtest.h>

namespace gpuledger::slurm {
namespace {

TEST(SlurmJobs, SqueueLinesGiveEachJobsPlainFields) {
  size_t dropped = 0;
  const auto jobs = parse_squeue("42|alice|physics|gpu|normal\n43|bob|chemistry|debug|(null)\n", &dropped);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs.at("42"), (JobFacts{"42", "alice", "physics", "gpu", "normal"}));
  EXPECT_EQ(jobs.at("43").qos, "");  // (null): none, not a QOS named "(null)"
  EXPECT_EQ(dropped, 0u);
}

// Attack: squeue is asked for no field a job's owner writes, but a line that
// is not five plain names (a forged separator, spaces, a sixth field, a job
// id that is no number) is dropped whole, never read in part.
TEST(SlurmJobs, ALineThatIsNotFivePlainNamesIsDropped) {
  size_t dropped = 0;
  const auto jobs = parse_squeue(
      "42|alice|physics|gpu|normal|extra\n43|bob|chem istry|debug|normal\n44|eve|a\x1b[2J|gpu|normal\n"
      "x45|eve|physics|gpu|normal\n46|eve|physics|gpu\n47|carol|bio|gpu|normal\n",
      &dropped);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs.at("47").account, "bio");
  EXPECT_EQ(dropped, 5u);
}

TEST(SlurmJobs, RunBoundedReadsStdoutAndStopsWhatOutlivesItsTime) {
  EXPECT_EQ(run_bounded({"printf", "a|b"}, std::chrono::seconds(5), 100), "a|b");
  EXPECT_FALSE(run_bounded({"false"}, std::chrono::seconds(5), 100));
  EXPECT_FALSE(run_bounded({"/nonexistent/squeue"}, std::chrono::seconds(5), 100));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(run_bounded({"sleep", "30"}, std::chrono::milliseconds(200), 100));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(run_bounded({"yes"}, std::chrono::seconds(5), 4096));  // more than it may read
}

}  // namespace
}  // namespace gpuledger::slurm
