// Xid lines as NVIDIA drivers log them, and the /dev/kmsg records carrying them.
#include <gtest/gtest.h>

#include "device/xid_parser.h"

namespace gpuledger::device {
namespace {

struct Case {
  const char* line;
  const char* bus;
  unsigned xid;
  std::optional<uint32_t> pid;
  const char* name;
  const char* message;
};

TEST(XidParser, DriverLineVariants) {
  const Case cases[] = {
      {"NVRM: Xid (PCI:0000:07:00): 79, pid=1234, name=python, GPU has fallen off the bus.", "00000000:07:00.0", 79,
       1234u, "python", "GPU has fallen off the bus."},
      {"NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
       "00000000:3B:00.0", 13, std::nullopt, "", "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address"},
      {"NVRM: Xid (PCI:0000:07:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
       "00000000:07:00.0", 79, std::nullopt, "", "GPU has fallen off the bus."},
      {"NVRM: Xid (PCI:0001:00:00): 31, pid=2046, name=python3, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS",
       "00000001:00:00.0", 31, 2046u, "python3", "Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS"},
      {"NVRM: Xid (PCI:0000:b1:00): 43, pid=1830, Ch 00000008", "00000000:B1:00.0", 43, 1830u, "", "Ch 00000008"},
      {"NVRM: Xid (0000:82:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer",
       "00000000:82:00.0", 48, std::nullopt, "",
       "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer"},
      {"[ 1234.567890] NVRM: Xid (PCI:0000:41:00): 94, pid=77, name=trainer, Contained: SM (0x1). RST: No, D-RST: No",
       "00000000:41:00.0", 94, 77u, "trainer", "Contained: SM (0x1). RST: No, D-RST: No"},
      {"NVRM: Xid (PCI:0000:07:00): 119", "00000000:07:00.0", 119, std::nullopt, "", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    auto ev = parse_xid_message(c.line);
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->pci_bus_id, c.bus);
    EXPECT_EQ(ev->xid, c.xid);
    EXPECT_EQ(ev->pid, c.pid);
    EXPECT_EQ(ev->process_name, c.name);
    EXPECT_EQ(ev->message, c.message);
  }
}

TEST(XidParser, IgnoresEverythingElse) {
  for (const char* line : {"", "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
                           "NVRM: GPU at PCI:0000:07:00: GPU-1234", "NVRM: Xid (PCI:0000:07:00): , pid=1",
                           "NVRM: Xid (PCI:0000:07:00) 79", "NVRM: Xid (): 79", "NVRM: Xid (PCI:0000:07:00): 79abc",
                           "usb 1-1: new high-speed USB device", "NVRM: Xid (PCI:0000:07:00"}) {
    EXPECT_FALSE(parse_xid_message(line)) << line;
  }
}

TEST(KmsgRecord, ParsesPrefixAndDropsDictionary) {
  auto r = parse_kmsg_record(
      "4,1542,93184001,-;NVRM: Xid (PCI:0000:07:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
      " SUBSYSTEM=pci\n DEVICE=+pci:0000:07:00.0\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, 0u);
  EXPECT_EQ(r->level, 4u);
  EXPECT_EQ(r->seq, 1542u);
  EXPECT_EQ(r->usec, 93184001u);
  EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:07:00): 79, pid=1, name=x, GPU has fallen off the bus.");

  auto user = parse_kmsg_record("12,7,100,-,caller=T123;hello\n");  // facility 1 (user), level 4
  ASSERT_TRUE(user);
  EXPECT_EQ(user->facility, 1u);
  EXPECT_EQ(user->level, 4u);
  EXPECT_EQ(user->message, "hello");

  EXPECT_FALSE(parse_kmsg_record("no prefix here"));
  EXPECT_FALSE(parse_kmsg_record("x,1,2,-;msg"));
  EXPECT_FALSE(parse_kmsg_record("6,1;msg"));
}

}  // namespace
}  // namespace gpuledger::device
