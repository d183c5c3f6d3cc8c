// Tests for probes/overlay_layers.h: the backing file of an overlay file is
// found from the host's mount table and proven by its inode, or not at all.
#include "probes/overlay_layers.h"

#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "probes/library_discovery.h"

namespace gpuledger::probes {
namespace {
namespace fs = std::filesystem;

TEST(OverlayLayers, ReadsLayersOfTheOverlayWithThatDevice) {
  const std::string host =
      "40 22 0:39 / /ctr/one rw - overlay overlay rw,lowerdir=/l/a\\134:b:/l/c,upperdir=/u/1,workdir=/w/1\n"
      "41 22 0:40 / /ctr/two rw - overlay overlay rw,lowerdir=/l/c,lowerdir+=/l/d,upperdir=/u/2,workdir=/w/2\n"
      "42 22 254:1 / /data rw - ext4 /dev/vda1 rw\n";
  auto one = overlay_layers(host, "0:39");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->upper, "/u/1");
  EXPECT_EQ(one->lowers, (std::vector<std::string>{"/l/a:b", "/l/c"}));
  auto two = overlay_layers(host, "0:40");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->lowers, (std::vector<std::string>{"/l/c", "/l/d"}));
  EXPECT_FALSE(overlay_layers(host, "254:1"));  // not an overlay
  EXPECT_FALSE(overlay_layers(host, "0:41"));
}

TEST(OverlayLayers, PathInOverlayUsesTheMountHoldingIt) {
  const std::string mine =
      "1 0 0:39 / / rw - overlay overlay rw,lowerdir=/evil\n"
      "2 1 0:39 /sub /mnt rw - overlay overlay rw\n"
      "3 1 0:50 / /proc rw - proc proc rw\n";
  EXPECT_EQ(path_in_overlay(mine, "0:39", "/usr/lib/libcuda.so.1"), "/usr/lib/libcuda.so.1");
  EXPECT_EQ(path_in_overlay(mine, "0:39", "/mnt/lib/libcuda.so.1"), "/sub/lib/libcuda.so.1");
  EXPECT_FALSE(path_in_overlay(mine, "0:39", "/proc/self/exe"));  // another device holds it
}

// A real overlay: the lower file is found, and a lower file that is not the
// expected inode (a tenant's swap, say) is refused.
TEST(OverlayLayers, OpensTheBackingFileOnlyWhenItIsTheExpectedInode) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting overlayfs needs root";
  const fs::path root = fs::temp_directory_path() / ("gl-ovl-" + std::to_string(::getpid()));
  for (const char* d : {"lower", "upper", "work", "merged"}) fs::create_directories(root / d);
  { std::ofstream(root / "lower" / "libx.so") << "lower bytes"; }
  const std::string options = "lowerdir=" + (root / "lower").string() + ",upperdir=" + (root / "upper").string() +
                              ",workdir=" + (root / "work").string();
  ASSERT_EQ(::mount("overlay", (root / "merged").c_str(), "overlay", 0, options.c_str()), 0) << strerror(errno);
  const std::string merged_file = (root / "merged" / "libx.so").string();
  const auto overlay_id = file_id_of(merged_file).value();
  const auto lower_id = file_id_of((root / "lower" / "libx.so").string()).value();
  const auto self = static_cast<uint32_t>(::getpid());

  auto found = open_overlay_backing("/proc", self, merged_file, overlay_id.dev, lower_id);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, lower_id);
  EXPECT_FALSE(found->on_overlay);
  // Whatever the kernel said is mapped must be what is opened: another inode is nothing.
  EXPECT_FALSE(open_overlay_backing("/proc", self, merged_file, overlay_id.dev, FileId{lower_id.dev, 1}));
  // A symlink in a layer is never followed (it would resolve in the host's root).
  fs::create_symlink("/etc/hostname", root / "lower" / "liby.so");
  auto host_file = file_id_of("/etc/hostname").value();
  EXPECT_FALSE(open_overlay_backing("/proc", self, (root / "merged" / "liby.so").string(), overlay_id.dev, host_file));
  ASSERT_EQ(::umount((root / "merged").c_str()), 0);
  fs::remove_all(root);
}

}  // namespace
}  // namespace gpuledger::probes
