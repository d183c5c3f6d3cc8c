#include "identity/cgroup_fs.h"

#include "common/mountinfo.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace gpuledger::identity {
namespace fs = std::filesystem;

CgroupMounts discover_cgroup_mounts(const std::string& mountinfo, const std::string& proc_cgroups,
                                    const std::string& v1_controller) {
  CgroupMounts mounts;
  mounts.v1_controller = v1_controller;
  std::ifstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    auto m = parse_mountinfo_line(line);
    if (!m) continue;
    if (m->fstype == "cgroup2" && mounts.v2.empty()) {
      mounts.v2 = m->mount_point;
    } else if (m->fstype == "cgroup" && mounts.v1.empty()) {
      std::istringstream opts(m->super_options);
      for (std::string opt; std::getline(opts, opt, ',');)
        if (opt == v1_controller) mounts.v1 = m->mount_point;
    }
  }
  // /proc/cgroups lists the compiled-in controllers in subsystem-id order.
  std::ifstream cg(proc_cgroups);
  uint32_t index = 0;
  while (std::getline(cg, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name == v1_controller) mounts.v1_subsys_index = index;
    ++index;
  }
  if (mounts.v1.empty()) mounts.v1_subsys_index.reset();
  return mounts;
}

std::optional<uint64_t> cgroup_id_of(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_ino);
}

CgroupById cgroup_by_id(const std::string& mount, uint64_t id) {
  constexpr int kFileIdKernfs = 0xfe;  // FILEID_KERNFS: the handle is the 64-bit kernfs id
  CgroupById out;
  if (cgroup_id_of(mount) == id) return {CgroupById::kFound, "/"};
  int mount_fd = ::open(mount.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mount_fd < 0) return out;
  struct {
    file_handle handle;
    unsigned char id[8];
  } fh{};
  fh.handle.handle_bytes = sizeof(fh.id);
  fh.handle.handle_type = kFileIdKernfs;
  std::memcpy(fh.handle.f_handle, &id, sizeof(id));
  int fd = ::open_by_handle_at(mount_fd, &fh.handle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int err = errno;
  ::close(mount_fd);
  if (fd < 0) {
    if (err == ESTALE || err == ENOENT) out.state = CgroupById::kGone;  // removed (ids are never reused)
    return out;
  }
  std::error_code ec;
  const fs::path where = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);
  ::close(fd);
  const std::string prefix = mount == "/" ? "" : mount;
  const std::string text = where.string();
  if (ec || text.rfind(prefix + "/", 0) != 0 || text.find(" (deleted)") != std::string::npos) return out;
  return {CgroupById::kFound, text.substr(prefix.size())};
}

std::optional<std::string> find_cgroup_path(const std::string& mount, uint64_t id) {
  std::error_code ec;
  if (cgroup_id_of(mount) == id) return "/";
  switch (auto by_id = cgroup_by_id(mount, id); by_id.state) {
    case CgroupById::kFound:
      if (cgroup_id_of(mount + by_id.path) == id) return by_id.path;  // renamed since: walk
      break;
    case CgroupById::kGone:
      return std::nullopt;
    case CgroupById::kUnknown:
      break;
  }
  fs::recursive_directory_iterator it(mount, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    if (cgroup_id_of(it->path().string()) == id)
      return "/" + fs::relative(it->path(), mount, ec).string();
  }
  return std::nullopt;
}

}  // namespace gpuledger::identity
