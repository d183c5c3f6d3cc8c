// Which workloads are GPU infrastructure (the CUDA MPS server and control
// daemon): only the real executable in an administrator's place counts.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "identity/infrastructure.h"
#include "identity/workload_classifier.h"

namespace gpuledger::identity {
namespace {
namespace fs = std::filesystem;

class Infrastructure : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuledger-infra-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    fs::create_directories(dir_ + "/bin");
    fs::create_directories(dir_ + "/proc");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file, and a process 100+n whose /proc/<pid>/exe points at it.
  uint32_t process(const std::string& file_name, mode_t mode = 0755) {
    std::string file = dir_ + "/bin/" + std::to_string(next_) + "/" + file_name;
    fs::create_directories(fs::path(file).parent_path());
    std::ofstream(file) << "#!/bin/true\n";
    ::chmod(file.c_str(), mode);
    uint32_t pid = next_++;
    fs::create_directories(dir_ + "/proc/" + std::to_string(pid));
    fs::create_symlink(file, dir_ + "/proc/" + std::to_string(pid) + "/exe");
    return pid;
  }
  InfrastructureJudge judge() const { return InfrastructureJudge({kDefaultInfrastructureNamespaces, dir_ + "/proc"}); }

  std::string dir_;
  uint32_t next_ = 100;
};

const Workload kPod = classify_cgroup_path(
    "/kubepods/besteffort/pod0f000000-0000-4000-8000-000000000000/" + std::string(64, 'a'));

TEST_F(Infrastructure, TheMpsServerInAnInfrastructureNamespaceIsInfrastructure) {
  ASSERT_EQ(kPod.kind, WorkloadKind::kKubernetes);
  auto j = judge();
  auto server = process("nvidia-cuda-mps-server"), control = process("nvidia-cuda-mps-control");
  EXPECT_TRUE(j.is_infrastructure(kPod, {"gpu-operator", "p", "c", ""}, {server, control}));
  EXPECT_TRUE(j.is_infrastructure(kPod, {"nvidia-device-plugin", "p", "c", ""}, {server}));
  // In a tenant's namespace, or with its namespace unknown: a tenant.
  EXPECT_FALSE(j.is_infrastructure(kPod, {"ml", "p", "c", ""}, {server}));
  EXPECT_FALSE(j.is_infrastructure(kPod, {}, {server}));
  // Another program beside it, a look-alike name, or no process: not infrastructure.
  EXPECT_FALSE(j.is_infrastructure(kPod, {"gpu-operator", "p", "c", ""}, {server, process("python3")}));
  EXPECT_FALSE(j.is_infrastructure(kPod, {"gpu-operator", "p", "c", ""}, {process("nvidia-cuda-mps-server.evil")}));
  EXPECT_FALSE(j.is_infrastructure(kPod, {"gpu-operator", "p", "c", ""}, {}));
  EXPECT_FALSE(j.is_infrastructure(kPod, {"gpu-operator", "p", "c", ""}, {999999}));  // gone: no exe to read
  // Configured namespaces replace the defaults.
  InfrastructureJudge only_mine({{"mps-system"}, dir_ + "/proc"});
  EXPECT_TRUE(only_mine.is_infrastructure(kPod, {"mps-system", "p", "c", ""}, {server}));
  EXPECT_FALSE(only_mine.is_infrastructure(kPod, {"gpu-operator", "p", "c", ""}, {server}));
}

TEST_F(Infrastructure, OutsideKubernetesOnlyAHostServiceRunningARootOwnedBinary) {
  auto j = judge();
  auto server = process("nvidia-cuda-mps-server");
  auto service = classify_cgroup_path("/system.slice/nvidia-mps.service");
  EXPECT_TRUE(j.is_infrastructure(service, {}, {server}));
  // Writable by others: anybody could have put it there.
  EXPECT_FALSE(j.is_infrastructure(service, {}, {process("nvidia-cuda-mps-server", 0777)}));
  // A user's session, a container, a Slurm job: tenants.
  EXPECT_FALSE(j.is_infrastructure(classify_cgroup_path("/user.slice/user-1000.slice/session-3.scope"), {}, {server}));
  EXPECT_FALSE(j.is_infrastructure(
      classify_cgroup_path("/user.slice/user-1000.slice/user@1000.service/app.slice/mps.service"), {}, {server}));
  EXPECT_FALSE(j.is_infrastructure(classify_cgroup_path("/system.slice/docker-" + std::string(64, 'b') + ".scope"),
                                   {}, {server}));
  EXPECT_FALSE(j.is_infrastructure(classify_cgroup_path("/slurm/uid_1000/job_42/step_0"), {}, {server}));
  EXPECT_FALSE(j.is_infrastructure(kPod, {}, {server}));
}

TEST(InfrastructureNames, OnlyTheTwoMpsExecutables) {
  EXPECT_TRUE(is_mps_executable_name("nvidia-cuda-mps-server"));
  EXPECT_TRUE(is_mps_executable_name("nvidia-cuda-mps-control"));
  for (auto bad : {"", "nvidia-cuda-mps-server ", "nvidia-cuda-mps-server (deleted)", "NVIDIA-CUDA-MPS-SERVER",
                   "nvidia-smi", "mps-control-daemon"})
    EXPECT_FALSE(is_mps_executable_name(bad)) << bad;
}

}  // namespace
}  // namespace gpuledger::identity
