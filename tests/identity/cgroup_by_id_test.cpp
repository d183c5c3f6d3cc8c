// A cgroup id is resolved by asking the kernel (its kernfs file handle), not
// by walking the tree: a workload whose path capture was lost is named in one
// call, and one that is gone is known to be gone, so it can be retired.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "identity/cgroup_fs.h"
#include "identity/workload_directory.h"

namespace gpuledger::identity {
namespace {

TEST(CgroupById, FindsALiveCgroupAndKnowsAGoneOne) {
  const std::string mount = discover_cgroup_mounts().v2;
  if (mount.empty() || ::geteuid() != 0) GTEST_SKIP() << "needs root and a cgroup2 mount";
  const std::string relative = "/gl-by-id-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir((mount + relative).c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((mount + relative + "/leaf").c_str(), 0755), 0);
  const uint64_t id = cgroup_id_of(mount + relative + "/leaf").value();

  const CgroupById live = cgroup_by_id(mount, id);
  EXPECT_EQ(live.state, CgroupById::kFound);
  EXPECT_EQ(live.path, relative + "/leaf");
  EXPECT_EQ(find_cgroup_path(mount, id), relative + "/leaf");
  EXPECT_EQ(cgroup_by_id(mount, cgroup_id_of(mount).value()).path, "/");

  ASSERT_EQ(::rmdir((mount + relative + "/leaf").c_str()), 0);
  ASSERT_EQ(::rmdir((mount + relative).c_str()), 0);
  EXPECT_EQ(cgroup_by_id(mount, id).state, CgroupById::kGone);
  EXPECT_EQ(find_cgroup_path(mount, id), std::nullopt);
}

// A key the directory never learned (its new-workload event lost) still
// retires once its cgroup is gone, instead of being kept "to be sure" forever.
TEST(CgroupById, AnUnnamedWorkloadIsKnownGone) {
  const CgroupMounts mounts = discover_cgroup_mounts();
  if (mounts.v2.empty() || ::geteuid() != 0) GTEST_SKIP() << "needs root and a cgroup2 mount";
  const std::string dir = mounts.v2 + "/gl-unnamed-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const uint64_t id = cgroup_id_of(dir).value();
  WorkloadDirectory directory(mounts);
  EXPECT_TRUE(directory.still_exists(id));
  EXPECT_EQ(directory.size(), 0u) << "asking does not name it";
  ASSERT_EQ(::rmdir(dir.c_str()), 0);
  EXPECT_FALSE(directory.still_exists(id));
}

}  // namespace
}  // namespace gpuledger::identity
