#include "probes/uprobe_multi.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace gpuledger::probes {
namespace {

constexpr int kBpfLinkCreate = 28;          // BPF_LINK_CREATE
constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

// union bpf_attr's link_create member, uprobe_multi variant (kernel uapi layout).
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
  uint32_t pad;
};

}  // namespace

int link_uprobe_multi(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                      const std::vector<uint64_t>& cookies, bool retprobe, int pid) {
  if (!cookies.empty() && cookies.size() != offsets.size()) return -EINVAL;
  LinkCreateUprobeMulti attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kAttachUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(path.c_str());
  attr.offsets = reinterpret_cast<uint64_t>(offsets.data());
  attr.cookies = cookies.empty() ? 0 : reinterpret_cast<uint64_t>(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.multi_flags = retprobe ? kUprobeMultiReturn : 0;
  attr.pid = static_cast<uint32_t>(pid);
  long fd = ::syscall(__NR_bpf, kBpfLinkCreate, &attr, sizeof(attr));
  return fd < 0 ? -errno : static_cast<int>(fd);
}

}  // namespace gpuledger::probes
