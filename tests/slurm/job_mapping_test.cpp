#include "slurm/job_mapping.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/unique_fd.h"
#include "slurm/job_mapping_watch.h"

namespace gpuledger::slurm {
namespace {
namespace fs = std::filesystem;

class JobMappingDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gl_jobmap_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  JobMapping read() {
    UniqueFd fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return read_job_mapping(fd.get());
  }
  fs::path dir_;
};

TEST(JobMappingNames, GpuShapesOnly) {
  for (const char* ok : {"0", "7", "1234", "0.11", "GPU-5b0e1f5a-59f4-4f0e-b8d6-0e0f6f2b7c3d", "MIG-abc-123"})
    EXPECT_TRUE(gpu_file_name(ok)) << ok;
  for (const char* bad : {"", ".", "..", "12345", "0.", ".1", "a", "GPU-", "GPU-x/y", "0 ", "GPU-zz", "../0", "-1"})
    EXPECT_FALSE(gpu_file_name(bad)) << bad;
}

TEST(JobMappingLines, JobIdsOrJobAndUidEachOnce) {
  size_t skipped = 0;
  EXPECT_EQ(parse_job_lines("42\n43 1000\n\n42\r\n", &skipped), (std::vector<std::string>{"42", "43"}));
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(parse_job_lines("slurm/42\n42;rm\n-1\n 42\n42 x\n123456789012345678901\n44", &skipped),
            (std::vector<std::string>{"44"}));
  EXPECT_EQ(skipped, 6u);
}

TEST(JobMappingLines, AtMostMaxLinesPerFile) {
  std::string text;
  for (size_t i = 0; i < kMaxLinesPerFile + 10; ++i) text += std::to_string(i + 1) + "\n";
  size_t skipped = 0;
  EXPECT_EQ(parse_job_lines(text, &skipped).size(), kMaxLinesPerFile);
  EXPECT_EQ(skipped, 10u);
}

TEST_F(JobMappingDir, OneFilePerGpuWithItsJobs) {
  write("0", "42\n");
  write("1", "43 1000\n44\n");
  write("2", "");
  const JobMapping m = read();
  EXPECT_EQ(m.jobs_by_gpu, (std::map<std::string, std::vector<std::string>>{{"0", {"42"}}, {"1", {"43", "44"}}}));
  EXPECT_EQ(m.skipped_files, 0u);
}

// Attack: whoever can write the directory tries to make the agent read other
// files (links), block it (a FIFO), or eat its memory (huge or many files).
TEST_F(JobMappingDir, LinksFifosDirectoriesAndHugeFilesAreSkipped) {
  write("secret", "99\n");
  fs::create_symlink(dir_ / "secret", dir_ / "0");
  fs::create_symlink("/etc/shadow", dir_ / "1");
  ASSERT_EQ(::mkfifo((dir_ / "2").c_str(), 0600), 0);  // opened O_NONBLOCK, never read: not a regular file
  fs::create_directory(dir_ / "3");
  write("4", std::string(kMaxFileBytes + 1, '1'));
  write("5", "45\n");
  write(".lock", "");  // the prolog's, and its files being written: not read, not counted
  write(".5.46", "46\n");
  const JobMapping m = read();
  EXPECT_EQ(m.jobs_by_gpu, (std::map<std::string, std::vector<std::string>>{{"5", {"45"}}}));
  EXPECT_EQ(m.skipped_files, 6u);  // secret (no GPU's name), 0, 1, 2, 3, 4
}

TEST_F(JobMappingDir, AtMostMaxFiles) {
  for (size_t i = 0; i < kMaxFiles + 5; ++i) write(std::to_string(i % 10000) + "." + std::to_string(i / 10000), "1\n");
  const JobMapping m = read();
  EXPECT_EQ(m.jobs_by_gpu.size(), kMaxFiles);
  EXPECT_EQ(m.skipped_files, 5u);
}

TEST_F(JobMappingDir, TheWatchReadsAgainOnlyWhenTheDirectoryChanged) {
  write("0", "42\n");
  JobMappingWatch watch(dir_.string());
  ASSERT_TRUE(watch.poll());
  EXPECT_EQ(watch.poll()->jobs_by_gpu.at("0"), (std::vector<std::string>{"42"}));
  write("1", "43\n");  // the prolog of the next job
  EXPECT_EQ(watch.poll()->jobs_by_gpu.size(), 2u);
  fs::remove(dir_ / "0");  // the epilog of the first
  EXPECT_EQ(watch.poll()->jobs_by_gpu, (std::map<std::string, std::vector<std::string>>{{"1", {"43"}}}));
}

TEST_F(JobMappingDir, AMissingDirectoryIsTheSourceDownUntilItIsThere) {
  fs::remove_all(dir_);
  JobMappingWatch watch(dir_.string());
  EXPECT_FALSE(watch.poll());
  EXPECT_NE(watch.down_reason().find("cannot be opened"), std::string::npos);
  fs::create_directories(dir_);
  write("0", "42\n");
  ASSERT_TRUE(watch.poll());
  fs::remove_all(dir_);  // removed under the watch
  EXPECT_FALSE(watch.poll());
  fs::create_directories(dir_);
  EXPECT_TRUE(watch.poll());
  EXPECT_TRUE(watch.poll()->jobs_by_gpu.empty());
}

}  // namespace
}  // namespace gpuledger::slurm
