#include "slurm/slurm_cgroups.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

namespace gpuledger::slurm {
namespace {
namespace fs = std::filesystem;

// A directory laid out as a cgroup hierarchy: where slurmd puts jobs (v1's
// slurm/uid_<u>/job_<n>, v2's system.slice/slurmstepd.scope/job_<n>), and
// where a tenant could make look-alikes (inside its own job or service).
TEST(SlurmCgroups, OnlyJobsWhereSlurmPutsThem) {
  const fs::path root = fs::temp_directory_path() / ("gl_slurmcg_" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const char* d : {"slurm/uid_1000/job_42/step_0", "slurm/uid_1001/job_43", "system.slice/slurmstepd.scope/job_44",
                        "slurm/uid_1000/job_42/step_0/slurm/uid_0/job_99",  // a tenant's, inside job 42
                        "system.slice/trainer.service/slurm/uid_0/job_98",  // a service's look-alike
                        "user.slice/slurm/uid_0/job_97", "slurm/uid_1000/job_x1", "slurm/notuid/job_96"})
    fs::create_directories(root / d);
  fs::create_directory_symlink(root / "slurm/uid_1000/job_42", root / "slurm/uid_1000/job_95");
  std::map<std::string, LiveJob> jobs;
  add_live_slurm_jobs(root.string(), jobs);
  fs::remove_all(root);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs.at("42").cgroup_path, "/slurm/uid_1000/job_42");
  EXPECT_EQ(jobs.at("42").uid, 1000u);
  EXPECT_EQ(jobs.at("43").uid, 1001u);
  EXPECT_EQ(jobs.at("44").cgroup_path, "/system.slice/slurmstepd.scope/job_44");
  EXPECT_FALSE(jobs.at("44").uid);
}

}  // namespace
}  // namespace gpuledger::slurm
