// Escape and device naming for the NVIDIA ioctl plane, and the device filter
// the agent is configured with. No BPF needed.
#include <gtest/gtest.h>

#include "device/ioctl_names.h"
#include "device/ioctl_plane.h"

namespace gpuledger::device {
namespace {

constexpr const char* kProcDevices =
    "Character devices:\n"
    "  1 mem\n"
    "  4 /dev/vc/0\n"
    "195 nvidia-frontend\n"
    "234 nvidia-uvm\n"
    "235 nvidia-nvswitch\n"
    "\n"
    "Block devices:\n"
    "  8 sd\n"
    "236 nvidia-uvm-fake-block\n";

TEST(IoctlNames, NamesNvidiaEscapesFromTheDriverTables) {
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x27), "NV_ESC_RM_ALLOC_MEMORY");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x2A), "NV_ESC_RM_CONTROL");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x2B), "NV_ESC_RM_ALLOC");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x5E), "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x5F), "NV_ESC_RM_LOCKLESS_DIAGNOSTIC");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 200), "NV_ESC_CARD_INFO");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 210), "NV_ESC_CHECK_VERSION_STR");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 218), "NV_ESC_WAIT_OPEN_COMPLETE");
}

TEST(IoctlNames, NamesUvmCommandsByTheirWholeNumber) {
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 0x30000001), "UVM_INITIALIZE");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 0x30000002), "UVM_DEINITIALIZE");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 1), "UVM_RESERVE_VA");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 37), "UVM_REGISTER_GPU");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 51), "UVM_MIGRATE");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 71), "UVM_POPULATE_PAGEABLE");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 2047), "UVM_IS_8_SUPPORTED");
}

TEST(IoctlNames, UnknownNumbersAreHexNeverGuessed) {
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x26), "0x26");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x30), "0x30");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 202), "0xca");  // a gap in NV_IOCTL_BASE + n
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 8), "0x8");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 21), "0x15");  // Windows-only UVM_REGION_SET_BACKING
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 0x30000003), "0x30000003");
  // A table belongs to its driver: UVM numbers on nvidia.ko and the reverse are unknown.
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kNvidia, 0x30000001), "0x30000001");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 0x5F), "0x5f");
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kUvm, 0x2A), "UVM_SET_PREFERRED_LOCATION");  // 42
  EXPECT_EQ(ioctl_escape_name(IoctlDeviceKind::kOther, 0x2A), "0x2a");
}

TEST(IoctlNames, DeviceLabels) {
  EXPECT_EQ(ioctl_device_label(IoctlDeviceKind::kNvidia, 195, 255), "nvidiactl");
  EXPECT_EQ(ioctl_device_label(IoctlDeviceKind::kNvidia, 195, 254), "nvidia-modeset");
  EXPECT_EQ(ioctl_device_label(IoctlDeviceKind::kNvidia, 195, 0), "nvidia0");
  EXPECT_EQ(ioctl_device_label(IoctlDeviceKind::kNvidia, 195, 7), "nvidia7");
  EXPECT_EQ(ioctl_device_label(IoctlDeviceKind::kUvm, 234, 0), "nvidia-uvm");
  EXPECT_EQ(ioctl_device_label(IoctlDeviceKind::kUvm, 234, 1), "nvidia-uvm-tools");
  EXPECT_EQ(ioctl_device_label(IoctlDeviceKind::kOther, 1, 3), "1:3");
}

TEST(IoctlDeviceSpec, MajorsMinorsAndKinds) {
  auto f = parse_ioctl_device_spec("195", kProcDevices);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, (IoctlDeviceFilter{195, std::nullopt, IoctlDeviceKind::kNvidia}));
  f = parse_ioctl_device_spec("195:255", kProcDevices);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, (IoctlDeviceFilter{195, 255u, IoctlDeviceKind::kNvidia}));
  f = parse_ioctl_device_spec("1:3", kProcDevices);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, (IoctlDeviceFilter{1, 3u, IoctlDeviceKind::kOther}));
  f = parse_ioctl_device_spec("1:3=nvidia", kProcDevices);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, (IoctlDeviceFilter{1, 3u, IoctlDeviceKind::kNvidia}));
  f = parse_ioctl_device_spec("nvidia-uvm", kProcDevices);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, (IoctlDeviceFilter{234, std::nullopt, IoctlDeviceKind::kUvm}));
  EXPECT_TRUE(f->escape_is_full_request());
  f = parse_ioctl_device_spec("mem=uvm", kProcDevices);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, (IoctlDeviceFilter{1, std::nullopt, IoctlDeviceKind::kUvm}));
}

TEST(IoctlDeviceSpec, RejectsWhatItCannotUse) {
  std::string why;
  EXPECT_FALSE(parse_ioctl_device_spec("", kProcDevices, &why));
  EXPECT_FALSE(parse_ioctl_device_spec("195:", kProcDevices, &why));
  EXPECT_FALSE(parse_ioctl_device_spec("195:x", kProcDevices, &why));
  EXPECT_FALSE(parse_ioctl_device_spec("4096", kProcDevices, &why));
  EXPECT_FALSE(parse_ioctl_device_spec("195=gpu", kProcDevices, &why));
  EXPECT_NE(why.find("kind"), std::string::npos);
  EXPECT_FALSE(parse_ioctl_device_spec("nvidia-uvm-fake-block", kProcDevices, &why));  // a block device
  EXPECT_FALSE(parse_ioctl_device_spec("nvidia-uvm", "Character devices:\n  1 mem\n", &why));
  EXPECT_NE(why.find("/proc/devices"), std::string::npos);
}

TEST(IoctlDeviceSpec, DefaultsFollowTheLoadedModules) {
  auto with_uvm = default_ioctl_devices(kProcDevices);
  ASSERT_EQ(with_uvm.size(), 2u);
  EXPECT_EQ(with_uvm[0], (IoctlDeviceFilter{195, std::nullopt, IoctlDeviceKind::kNvidia}));
  EXPECT_EQ(with_uvm[1], (IoctlDeviceFilter{234, std::nullopt, IoctlDeviceKind::kUvm}));
  auto without = default_ioctl_devices("Character devices:\n  1 mem\n");
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(without[0].major, 195u);
  EXPECT_EQ(char_device_major(kProcDevices, "nvidia-nvswitch"), 235u);
  EXPECT_EQ(char_device_major(kProcDevices, "sd"), std::nullopt);  // block, not character
}

TEST(IoctlTotalsFolder, NeverGoesBackwardsWhenEntriesAreRecreated) {
  IoctlTotalsFolder folder;
  IoctlKey k{42, 195, 255, 0x2A};
  folder.absorb({{k, {10, 1000}}});
  folder.absorb({{k, {15, 1500}}});
  EXPECT_EQ(folder.totals().at(k), (IoctlTotals{15, 1500}));
  folder.absorb({{k, {3, 200}}});  // re-created entry: all of it is new
  EXPECT_EQ(folder.totals().at(k), (IoctlTotals{18, 1700}));
  folder.forget_entry(k);  // deleted after its last reading
  folder.absorb({{k, {4, 100}}});
  EXPECT_EQ(folder.totals().at(k), (IoctlTotals{22, 1800}));
}

}  // namespace
}  // namespace gpuledger::device
