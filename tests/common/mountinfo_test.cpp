// Tests for common/mountinfo.h.
#include "common/mountinfo.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

TEST(MountInfo, ParsesOptionalFieldsAndEscapes) {
  auto m = parse_mountinfo_line("36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->device, "98:0");
  EXPECT_EQ(m->root, "/mnt1");
  EXPECT_EQ(m->mount_point, "/mnt two");
  EXPECT_EQ(m->fstype, "ext3");
  EXPECT_EQ(m->super_options, "rw,errors=continue");
  EXPECT_FALSE(parse_mountinfo_line("36 35 98:0 /mnt1 /mnt rw"));
  EXPECT_EQ(unescape_mountinfo("a\\134b\\011c\\04"), "a\\b\tc\\04");
}

}  // namespace
}  // namespace gpuledger
