// The GPU a workload used, from the driver's side (identity/gpu_evidence.h):
// the device files its processes hold open, read as descriptors, and the
// environment only as a hint.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "identity/gpu_evidence.h"

namespace gpuledger::identity {
namespace {
namespace fs = std::filesystem;

const std::string kUuid0 = "GPU-00000000-1111-2222-3333-444444444444";
const std::string kUuid1 = "GPU-55555555-6666-7777-8888-999999999999";
const std::vector<GpuIdentity> kInventory = {{0, kUuid0, 0}, {1, kUuid1, 1}};

// A fake /proc: fd entries are links to device nodes made here (root: mknod)
// and to files a tenant could name anything.
TEST(GpuEvidence, TheOpenFilesAreAskedWhatTheyAreNotWhatTheyAreCalled) {
  if (::geteuid() != 0) GTEST_SKIP() << "device nodes need root (mknod)";
  char tmpl[] = "/tmp/gpuledger-proc-XXXXXX";
  const fs::path root = ::mkdtemp(tmpl);
  fs::create_directories(root / "42" / "fd");
  fs::create_directories(root / "dev");
  auto node = [&](const std::string& name, unsigned maj, unsigned min) {
    const fs::path p = root / "dev" / name;
    EXPECT_EQ(::mknod(p.c_str(), S_IFCHR | 0600, makedev(maj, min)), 0) << p;
    return p.string();
  };
  auto link = [&](const std::string& fd, const std::string& target) { fs::create_symlink(target, root / "42" / "fd" / fd); };
  link("0", node("pts3", 136, 3));
  link("3", node("nvidiactl", 195, 255));
  link("4", node("nvidia1", 195, 1));
  link("5", node("nvidia-uvm", 511, 0));
  link("6", root / "dev" / "nvidia1");
  link("7", node("nvidia-cap1", 237, 1));
  link("8", node("gpu7-by-another-name", 195, 7));  // the device counts, not its name
  link("9", node("nvidia248", 195, 248));           // not a GPU minor
  // A tenant's forgeries: a plain file and a directory named like GPUs, and a dangling name.
  std::ofstream(root / "dev" / "nvidia5") << "not a device\n";
  link("10", root / "dev" / "nvidia5");
  fs::create_directories(root / "dev" / "nvidia6");
  link("11", root / "dev" / "nvidia6");
  link("12", (root / "dev" / "nvidia3-gone").string());
  link("13", "socket:[12345]");
  EXPECT_EQ(read_open_gpu_minors(root.string(), 42), (std::vector<unsigned>{1, 7}));
  EXPECT_TRUE(read_open_gpu_minors(root.string(), 43).empty());  // gone
  // A tenant's fd directory replaced by a link elsewhere is not read.
  fs::create_directories(root / "44");
  fs::create_symlink(root / "42" / "fd", root / "44" / "fd");
  EXPECT_TRUE(read_open_gpu_minors(root.string(), 44).empty());
  // And the real one of this process: no NVIDIA device open here.
  EXPECT_TRUE(read_open_gpu_minors("/proc", static_cast<unsigned>(::getpid())).empty());
  fs::remove_all(root);
}

// The attack of issue 29: a process pads its descriptor table with 70,000
// descriptors and holds the GPU's device file past them (at 70,500). The scan
// stops at the bound, says so, and the next call goes on where it stopped and
// finds the device; the call after that starts over. Where the hard
// RLIMIT_NOFILE is lower and cannot be raised (no CAP_SYS_RESOURCE, as in some
// containers), the same attack runs scaled to it: padding past a bound of 9/10
// of the padding.
TEST(GpuEvidence, APaddedDescriptorTableDelaysButCannotHideTheDevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "device nodes need root (mknod)";
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  int padding = 70'000, device_fd = 70'500;
  size_t bound = kMaxFdsExamined;
  rlimit more{static_cast<rlim_t>(device_fd + 100), std::max<rlim_t>(old.rlim_max, device_fd + 100)};
  if (::setrlimit(RLIMIT_NOFILE, &more) != 0) {
    ASSERT_GE(old.rlim_max, 2'000u) << "too few descriptors allowed for the attack";
    device_fd = static_cast<int>(old.rlim_max) - 100;
    padding = device_fd - 500;
    bound = static_cast<size_t>(padding) * 9 / 10;
    more = {old.rlim_max, old.rlim_max};
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &more), 0) << std::strerror(errno);
    std::cout << "scaled to the hard limit " << old.rlim_max << ": " << padding << " descriptors of padding, the device at "
              << device_fd << ", a bound of " << bound << "\n";
  }
  char tmpl[] = "/tmp/gpuledger-dev-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  const fs::path node = dir / "nvidia3";
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0600, makedev(kNvidiaMajor, 3)), 0);
  // O_PATH: the file is held (its inode is the device's) without opening the driver, which is not here.
  const int device = ::open(node.c_str(), O_PATH | O_CLOEXEC);
  ASSERT_GE(device, 0) << std::strerror(errno);
  ASSERT_EQ(::dup2(device, device_fd), device_fd);
  ::close(device);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<int> pad;
  for (int i = 0; i < padding; ++i) {
    const int fd = ::dup(null);
    ASSERT_GE(fd, 0) << i << ": " << std::strerror(errno);
    pad.push_back(fd);
  }
  const unsigned self = static_cast<unsigned>(::getpid());

  FdScanCursor cursor;
  EXPECT_TRUE(read_open_gpu_minors("/proc", self, cursor, bound).empty());  // padding only
  EXPECT_TRUE(cursor.truncated);
  EXPECT_EQ(cursor.next_fd, bound);  // 0 .. bound-1 looked at: every lower number is taken
  EXPECT_EQ(read_open_gpu_minors("/proc", self, cursor, bound), (std::vector<unsigned>{3}));
  EXPECT_FALSE(cursor.truncated);
  EXPECT_EQ(cursor.next_fd, 0u);  // the table's end: the next call starts over
  EXPECT_TRUE(read_open_gpu_minors("/proc", self, cursor, bound).empty());
  EXPECT_TRUE(cursor.truncated);
  // A smaller bound walks the same table in more steps, each past the last.
  FdScanCursor small;
  std::vector<unsigned> found;
  int calls = 0;
  do {
    for (unsigned m : read_open_gpu_minors("/proc", self, small, bound / 3)) found.push_back(m);
    ++calls;
  } while (small.truncated && calls < 10);
  EXPECT_EQ(calls, 4);  // a bit more than `padding` descriptors, bound/3 a call
  EXPECT_EQ(found, (std::vector<unsigned>{3}));

  for (int fd : pad) ::close(fd);
  ::close(null);
  ::close(device_fd);
  ::setrlimit(RLIMIT_NOFILE, &old);
  // Unpadded now: one call reads the whole table.
  FdScanCursor after;
  read_open_gpu_minors("/proc", self, after);
  EXPECT_FALSE(after.truncated);
  fs::remove_all(dir);
}

// The same on a fake /proc (offsets that are not descriptor numbers): the
// cursor skips by number, nothing is lost between calls.
TEST(GpuEvidence, TheCursorWorksOnAnyDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "device nodes need root (mknod)";
  char tmpl[] = "/tmp/gpuledger-proc-XXXXXX";
  const fs::path root = ::mkdtemp(tmpl);
  fs::create_directories(root / "7" / "fd");
  const fs::path node = root / "gpu";
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0600, makedev(kNvidiaMajor, 1)), 0);
  for (int fd = 0; fd < 50; ++fd) fs::create_symlink(fd == 37 ? node : fs::path("/dev/null"), root / "7" / "fd" / std::to_string(fd));
  FdScanCursor cursor;
  std::vector<unsigned> found;
  int calls = 0;
  do {
    for (unsigned m : read_open_gpu_minors(root.string(), 7, cursor, 10)) found.push_back(m);
    ++calls;
  } while (cursor.truncated && calls < 20);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(found, (std::vector<unsigned>{1}));
  fs::remove_all(root);
}

TEST(GpuEvidence, TheDeviceSideWinsAndTheEnvironmentIsOnlyAHint) {
  const GpuIdentity gpu0 = kInventory[0], gpu1 = kInventory[1];
  // Agreeing, or the environment alone.
  auto c = choose_gpu(gpu1, {kUuid1}, kInventory);
  EXPECT_EQ(c.gpu->uuid, kUuid1);
  EXPECT_EQ(c.source, "device");
  EXPECT_FALSE(c.disagreed);
  c = choose_gpu(gpu1, {}, kInventory);
  EXPECT_EQ(c.gpu->uuid, kUuid1);
  EXPECT_EQ(c.source, "environment");
  // A forged environment: the process holds GPU 0.
  c = choose_gpu(gpu1, {kUuid0}, kInventory);
  ASSERT_TRUE(c.gpu);
  EXPECT_EQ(c.gpu->uuid, kUuid0);
  EXPECT_EQ(c.gpu->index, 0u);
  EXPECT_EQ(c.source, "device");
  EXPECT_TRUE(c.disagreed);
  // Held GPUs that do not include the hint, more than one: cannot say which.
  c = choose_gpu(gpu1, {kUuid0, "GPU-99999999-0000-0000-0000-000000000000"}, kInventory);
  EXPECT_FALSE(c.gpu);
  EXPECT_TRUE(c.disagreed);
  // No hint: one held GPU names it; none or several do not.
  c = choose_gpu(std::nullopt, {kUuid0}, kInventory);
  EXPECT_EQ(c.gpu->uuid, kUuid0);
  EXPECT_FALSE(c.disagreed);
  EXPECT_FALSE(choose_gpu(std::nullopt, {kUuid0, kUuid1}, kInventory).gpu);
  EXPECT_FALSE(choose_gpu(std::nullopt, {}, kInventory).gpu);
  // A MIG device's files name its parent GPU: the hint stands.
  GpuIdentity mig{std::nullopt, "MIG-dddddddd-3333-4333-8333-333333333333", std::nullopt};
  c = choose_gpu(mig, {kUuid0}, kInventory);
  EXPECT_EQ(c.gpu->uuid, mig.uuid);
  EXPECT_FALSE(c.disagreed);
}

}  // namespace
}  // namespace gpuledger::identity
