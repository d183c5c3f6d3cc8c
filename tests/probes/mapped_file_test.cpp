// Tests for probes/mapped_file.h: a mapped file is had exactly, or not at all.
#include "probes/mapped_file.h"
#include "probes/library_discovery.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpuledger::probes {
namespace {
namespace fs = std::filesystem;

TEST(ExecMappings, ParsesExecutableFileMappingsOnce) {
  const std::string maps =
      "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 1311 /usr/bin/cat\n"
      "55d0c0a02000-55d0c0a07000 r-xp 00002000 fe:01 1311 /usr/bin/cat\n"
      "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
      "7f0000001000-7f0000002000 r-xp 00001000 00:2a 99 /tmp/x/lib cuda.so (deleted)\n"
      "7f0000003000-7f0000004000 r-xp 00003000 fe:01 1311 /usr/bin/cat\n"
      "7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]\n"
      "garbage line\n";
  auto out = parse_exec_mappings(maps);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].range, "55d0c0a02000-55d0c0a07000");
  EXPECT_EQ(out[0].start, 0x55d0c0a02000u);
  EXPECT_EQ(out[0].printed, (FileId{(0xfeull << 20) | 1, 1311}));
  EXPECT_EQ(out[0].path, "/usr/bin/cat");
  EXPECT_EQ(out[1].path, "/tmp/x/lib cuda.so");
  EXPECT_TRUE(out[1].deleted);
  EXPECT_EQ(out[1].printed, (FileId{0x2a, 99}));
  auto at = parse_exec_mappings(maps, 0x7f0000001000u);
  ASSERT_EQ(at.size(), 1u);
  EXPECT_EQ(at[0].range, "7f0000001000-7f0000002000");
}

// Our own mapping of a file, opened back through map_files: the same inode.
TEST(OpenMappedFile, OpensTheMappedInodeEvenAfterThePathIsSwapped) {
  const fs::path dir = fs::temp_directory_path() / ("gl-mapped-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "lib.so";
  { std::ofstream(file) << std::string(8192, 'x'); }
  int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = ::mmap(nullptr, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  ::close(fd);
  const auto mapped_id = file_id_of(file.string()).value();
  // The path now names something else entirely.
  fs::remove(file);
  fs::create_symlink("/etc/hostname", file);

  auto lines = exec_mappings("/proc", static_cast<uint32_t>(::getpid()), reinterpret_cast<uint64_t>(p));
  ASSERT_EQ(lines.size(), 1u);
  std::string why;
  auto opened = open_mapped_file("/proc", static_cast<uint32_t>(::getpid()), lines[0], std::nullopt, why);
  ASSERT_TRUE(opened) << why;
  EXPECT_EQ(opened->id, mapped_id);
  // A kernel-reported inode that is not the mapping's is refused.
  auto wrong = open_mapped_file("/proc", static_cast<uint32_t>(::getpid()), lines[0], FileId{1, 2}, why);
  EXPECT_FALSE(wrong);
  EXPECT_NE(why.find("another file"), std::string::npos) << why;
  ::munmap(p, 8192);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::probes
