// Which layer file an overlay path stands for, from mountinfo text and real
// files in a temporary directory.
#include "probes/overlay_backing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/mountinfo.h"

namespace gpuledger::probes {
namespace {
namespace fs = std::filesystem;

class OverlayBacking : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gl-overlay-test-" + std::to_string(::getpid()));
    for (const char* d : {"l1/lib", "l2/lib", "up/lib"}) fs::create_directories(root_ / d);
  }
  void TearDown() override { fs::remove_all(root_); }
  void touch(const std::string& rel) { std::ofstream(root_ / rel) << "x"; }
  std::string mountinfo(const std::string& extra_after = "") const {
    std::string r = root_.string();
    return "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
           "40 22 0:39 / /ctr/rootfs rw,relatime shared:7 master:3 - overlay overlay rw,lowerdir=" +
           r + "/l1:" + r + "/l2,upperdir=" + r + "/up,workdir=" + r + "/work,uuid=on\n" + extra_after;
  }
  fs::path root_;
};

TEST_F(OverlayBacking, TheTopmostLowerLayerHoldingTheFileWins) {
  touch("l2/lib/libcuda.so.1");
  EXPECT_EQ(overlay_backing_file(mountinfo(), "/ctr/rootfs/lib/libcuda.so.1", {""}),
            (root_ / "l2/lib/libcuda.so.1").string());
  touch("l1/lib/libcuda.so.1");
  EXPECT_EQ(overlay_backing_file(mountinfo(), "/ctr/rootfs/lib/libcuda.so.1", {""}),
            (root_ / "l1/lib/libcuda.so.1").string());
}

TEST_F(OverlayBacking, ACopiedUpFileLivesInTheUpperLayer) {
  touch("l1/lib/libcuda.so.1");
  touch("up/lib/libcuda.so.1");
  EXPECT_EQ(overlay_backing_file(mountinfo(), "/ctr/rootfs/lib/libcuda.so.1", {""}),
            (root_ / "up/lib/libcuda.so.1").string());
}

TEST_F(OverlayBacking, RootsAreTriedInOrder) {
  touch("l2/lib/libcuda.so.1");
  EXPECT_EQ(overlay_backing_file(mountinfo(), "/ctr/rootfs/lib/libcuda.so.1", {"/nonexistent-root", ""}),
            (root_ / "l2/lib/libcuda.so.1").string());
}

TEST_F(OverlayBacking, PathsNotOnAnOverlayHaveNoBackingFile) {
  touch("l1/lib/libcuda.so.1");
  EXPECT_EQ(overlay_backing_file(mountinfo(), "/usr/lib/libcuda.so.1", {""}), std::nullopt);
  // A bind mount stacked over the overlay's lib directory hides it.
  std::string bind = "41 40 8:1 /host/lib /ctr/rootfs/lib rw - ext4 /dev/vda rw\n";
  EXPECT_EQ(overlay_backing_file(mountinfo(bind), "/ctr/rootfs/lib/libcuda.so.1", {""}), std::nullopt);
  // No layer holds the file.
  EXPECT_EQ(overlay_backing_file(mountinfo(), "/ctr/rootfs/lib/libmissing.so", {""}), std::nullopt);
  // /ctr/rootfs2 is not inside /ctr/rootfs.
  EXPECT_EQ(overlay_backing_file(mountinfo(), "/ctr/rootfs2/lib/libcuda.so.1", {""}), std::nullopt);
}

TEST_F(OverlayBacking, MalformedMountinfoIsIgnored) {
  touch("l1/lib/libcuda.so.1");
  std::string garbage = "garbage\n\n 1 2\n40 22 0:39 / /ctr/rootfs - overlay\n";
  EXPECT_EQ(overlay_backing_file(garbage, "/ctr/rootfs/lib/libcuda.so.1", {""}), std::nullopt);
}

TEST(MountInfo, ParsesOptionalFieldsAndEscapes) {
  auto m = parse_mountinfo_line("36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->root, "/mnt1");
  EXPECT_EQ(m->mount_point, "/mnt two");
  EXPECT_EQ(m->fstype, "ext3");
  EXPECT_EQ(m->super_options, "rw,errors=continue");
  EXPECT_FALSE(parse_mountinfo_line("36 35 98:0 /mnt1 /mnt rw"));
  EXPECT_EQ(unescape_mountinfo("a\\134b\\011c\\04"), "a\\b\tc\\04");
}

}  // namespace
}  // namespace gpuledger::probes
