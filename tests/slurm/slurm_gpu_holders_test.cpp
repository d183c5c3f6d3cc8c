#include "slurm/slurm_gpu_holders.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace gpuledger::slurm {
namespace {

// A stand-in scontrol printing what slurmctld 22.05 prints (scontrol_gres_test.cpp
// has the captured text): node n1 is host "h1"; job 7 holds GPU 1, job 8 GPU 0.
std::string stand_in_scontrol(const std::string& dir) {
  const std::string path = dir + "/scontrol";
  std::ofstream(path) << "#!/bin/sh\n"
                         "case \"$*\" in\n"
                         "  'show node --oneliner') echo 'NodeName=n1 Arch=x86_64 NodeAddr=10.0.0.1 NodeHostName=h1' ;;\n"
                         "  '-d show job 7') printf 'JobId=7 JobName=a\\n     Nodes=n1 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:1)\\n' ;;\n"
                         "  '-d show job 8') printf 'JobId=8 JobName=b\\n     Nodes=n1 CPU_IDs=1 Mem=0 GRES=gpu:1(IDX:0)\\n' ;;\n"
                         "  *) exit 1 ;;\n"
                         "esac\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

struct Jobs {
  std::mutex mu;
  std::vector<std::string> ids;
  std::vector<std::string> get() {
    std::lock_guard lock(mu);
    return ids;
  }
  void set(std::vector<std::string> v) {
    std::lock_guard lock(mu);
    ids = std::move(v);
  }
};

TEST(SlurmGpuHolders, TheControllersAnswerHoldsTheGpusAndANewJobIsWaitedFor) {
  char dir[] = "/tmp/gl_scontrol_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  Jobs jobs;
  jobs.set({"7"});
  SlurmGpuHolders holders([&] { return jobs.get(); }, std::chrono::seconds(30), "h1", stand_in_scontrol(dir));
  holders.start();  // asks once before it returns
  bool pending = true;
  auto m = holders.mapping_for({"7"}, &pending);
  ASSERT_TRUE(m.has_value()) << holders.down_reason();
  EXPECT_FALSE(pending);
  EXPECT_EQ(m->jobs_by_gpu, (std::map<std::string, std::vector<std::string>>{{"1", {"7"}}}));

  // Job 8 starts: its answer is due, so the observation waits, then it holds GPU 0.
  jobs.set({"7", "8"});
  holders.mapping_for({"7", "8"}, &pending);
  EXPECT_TRUE(pending);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pending && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    m = holders.mapping_for({"7", "8"}, &pending);
  }
  EXPECT_FALSE(pending);
  EXPECT_EQ(m->jobs_by_gpu, (std::map<std::string, std::vector<std::string>>{{"0", {"8"}}, {"1", {"7"}}}));

  // Answered, but job 8's account is not known yet: still waited for.
  holders.mapping_for({"7", "8"}, &pending, [](const std::string& job) { return job != "8"; });
  EXPECT_TRUE(pending);
  holders.stop();
  std::filesystem::remove_all(dir);
}

TEST(SlurmGpuHolders, AHostTheControllerDoesNotKnowLeavesTheMappingUnknown) {
  char dir[] = "/tmp/gl_scontrol_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  SlurmGpuHolders holders([] { return std::vector<std::string>{"7"}; }, std::chrono::seconds(30), "elsewhere",
                          stand_in_scontrol(dir));
  holders.start();
  bool pending = true;
  EXPECT_FALSE(holders.mapping_for({"7"}, &pending).has_value());
  EXPECT_FALSE(pending);  // never answered: unknown, not held back
  EXPECT_EQ(holders.down_reason(), "Slurm's controller knows no one node (NodeName or NodeHostName) elsewhere");
  holders.stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::slurm
