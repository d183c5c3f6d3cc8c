// The cgroup and start time of a live process from /proc (process_cgroup.h):
// the files' text as the kernel writes it, hostile command names, and the
// real /proc of this test.
#include "identity/process_cgroup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

namespace gpuledger::identity {
namespace {

TEST(ProcessCgroup, TheV2LineElseTheV1ControllersLine) {
  EXPECT_EQ(cgroup_path_in("0::/kubepods.slice/pod1/cri-containerd-ab.scope\n", "memory"),
            "/kubepods.slice/pod1/cri-containerd-ab.scope");
  EXPECT_EQ(cgroup_path_in("12:cpu,cpuacct:/a\n7:memory:/kubepods/pod1/ab\n1:name=systemd:/x\n", "memory"),
            "/kubepods/pod1/ab");
  EXPECT_EQ(cgroup_path_in("7:memory:/v1\n0::/v2\n", "memory"), "/v2");
  EXPECT_FALSE(cgroup_path_in("12:cpu:/a\n", "memory"));
  EXPECT_FALSE(cgroup_path_in("", "memory"));
  EXPECT_FALSE(cgroup_path_in("0::relative\n", "memory"));  // not a path the kernel writes
}

TEST(ProcessCgroup, TheStartTimeIsReadAfterTheLastParenthesisOfAHostileName) {
  // A command name may hold ") 1 2 3" to shift the fields of a naive reader.
  const std::string fields = " S 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10";
  EXPECT_EQ(start_ticks_in("42 (evil) 9 9 9 9 9) " + fields.substr(1)), 123456u);
  EXPECT_EQ(start_ticks_in("42 (plain)" + fields), 123456u);
  EXPECT_FALSE(start_ticks_in("42 (short) S 1"));
  EXPECT_FALSE(start_ticks_in("no parenthesis"));
}

TEST(ProcessCgroup, ThisProcessIsReadFromTheRealProc) {
  std::ifstream in("/proc/self/cgroup");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto expected = cgroup_path_in(text, "memory");
  ASSERT_TRUE(expected) << text;
  auto got = read_process_cgroup("/proc", static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->cgroup_path, *expected);
  const auto now_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  EXPECT_LE(got->start_unix_us, now_us + 2'000'000);  // started before now (whole seconds of boot time)
  EXPECT_GT(got->start_unix_us, now_us - 3'600'000'000ull);  // and within the hour (this test)
  EXPECT_FALSE(read_process_cgroup("/proc", 0));
  EXPECT_FALSE(read_process_cgroup("/nonexistent", 1));
}

}  // namespace
}  // namespace gpuledger::identity
