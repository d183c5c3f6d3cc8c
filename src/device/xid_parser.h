#pragma once
// Xid errors as the NVIDIA driver logs them to the kernel log:
//   NVRM: Xid (PCI:0000:07:00): 79, pid=1234, name=python, GPU has fallen off the bus.
//   NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): ...
//   NVRM: Xid (PCI:0000:07:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
//   NVRM: Xid (0000:82:00): 31, pid=2046, name=python3, Ch 00000008, intr 10000000. MMU Fault: ...
// and the /dev/kmsg records that carry them ("PRI,SEQ,TS,FLAGS;MESSAGE").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuledger::device {

struct XidEvent {
  std::string pci_bus_id;  // normalised like GpuInfo::pci_bus_id: "00000000:07:00.0" (the log omits the function: .0)
  unsigned xid = 0;
  std::optional<uint32_t> pid;  // absent when not logged or '<unknown>'
  std::string process_name;     // "" when not logged or <unknown>
  std::string message;          // the rest of the line, as logged
  bool operator==(const XidEvent&) const = default;
};

// An Xid event from one kernel log message (dmesg prefixes such as
// "[  12.34] " before "NVRM:" are fine); nullopt for any other message.
std::optional<XidEvent> parse_xid_message(std::string_view message);

// One /dev/kmsg record: "<facility*8+level>,<seq>,<usec>,<flags>[,...];<message>\n"
// followed by optional " KEY=value" dictionary lines (dropped).
struct KmsgRecord {
  unsigned facility = 0;  // 0: kernel; records written by userspace are never 0
  unsigned level = 0;
  uint64_t seq = 0;
  uint64_t usec = 0;  // since boot
  std::string message;
};
std::optional<KmsgRecord> parse_kmsg_record(std::string_view record);

}  // namespace gpuledger::device
